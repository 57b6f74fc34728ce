/**
 * Escaping for each platform's markup, and a small Markdown -> Telegram HTML
 * converter for agent output.
 *
 * The converter is safe by construction: the only tags it writes are ones it
 * opens and closes itself, in matched, properly nested pairs; every other
 * character goes through escapeTelegramHtml. So whatever the agent (or a user
 * quoting something into the agent) writes, Telegram gets well-formed HTML and
 * never "can't parse entities".
 */
import { isFenceClose, parseFenceOpen } from "./chunker.js";

const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };

/** Telegram parse_mode HTML: &, <, > everywhere, and " so the result is also safe inside an attribute. */
export function escapeTelegramHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => HTML_ESCAPES[c]!);
}

/** Slack mrkdwn: only &, < and > are control characters (they form <links|labels> and entities). */
export function escapeSlackMrkdwn(s: string): string {
  return s.replace(/[&<>]/g, (c) => HTML_ESCAPES[c]!);
}

const ZWSP = "\u200b";

/**
 * Defuses @everyone, @here and role mentions (<@&id>) in agent output, so a
 * prompt-injected reply can't ping a whole server. Defence in depth: the
 * Discord adapter should also send with allowedMentions restricted.
 */
export function neutralizeDiscordMentions(s: string): string {
  return s.replace(/@(everyone|here)/gi, `@${ZWSP}$1`).replace(/<@&/g, `<@${ZWSP}&`);
}

// ---------------------------------------------------------------------------
// Markdown -> Telegram HTML

type Token =
  | { k: "text"; v: string }
  | { k: "code"; v: string }
  | { k: "link"; href: string; children: Token[] }
  | { k: "delim"; tag: "b" | "i" | "s"; kind: string; raw: string; canOpen: boolean; canClose: boolean; role?: "open" | "close" };

const SAFE_HREF = /^(https?:\/\/|mailto:|tg:\/\/)[^\s<>"]+$/i;
const SAFE_LANG = /^[A-Za-z0-9_+#.-]{1,32}$/;
const ASCII_PUNCT = /[!-/:-@[-`{-~]/;
const PUNCT = /[\p{P}\p{S}]/u;
const WS = /\s/;

function flanking(s: string, start: number, end: number): { left: boolean; right: boolean; prevP: boolean; nextP: boolean } {
  // Start and end of text count as whitespace (CommonMark).
  const prev = start > 0 ? s[start - 1]! : " ";
  const next = end < s.length ? s[end]! : " ";
  const prevW = WS.test(prev);
  const nextW = WS.test(next);
  const prevP = PUNCT.test(prev);
  const nextP = PUNCT.test(next);
  return {
    left: !nextW && (!nextP || prevW || prevP),
    right: !prevW && (!prevP || nextW || nextP),
    prevP,
    nextP,
  };
}

/** Splits one paragraph into tokens; code spans and links are resolved here, emphasis later. */
function tokenize(s: string, allowLinks: boolean): Token[] {
  const tokens: Token[] = [];
  const n = s.length;
  let textStart = 0;
  const flush = (end: number) => {
    if (end > textStart) tokens.push({ k: "text", v: s.slice(textStart, end) });
  };
  // Memos keep scanning linear on hostile input such as "[[[[...]" or "` `` ``` ...".
  const noTickRun = new Set<number>();
  let nextBracket = -1;
  let nextParen = -1;

  let i = 0;
  while (i < n) {
    const c = s[i]!;
    if (c === "\\" && i + 1 < n && ASCII_PUNCT.test(s[i + 1]!)) {
      flush(i);
      tokens.push({ k: "text", v: s[i + 1]! });
      i += 2;
      textStart = i;
      continue;
    }
    if (c === "`") {
      let r = i;
      while (r < n && s[r] === "`") r++;
      const len = r - i;
      const close = noTickRun.has(len) ? -1 : findTickRun(s, r, len);
      if (close < 0) {
        noTickRun.add(len);
        i = r;
        continue;
      }
      flush(i);
      let v = s.slice(r, close);
      if (v.length >= 2 && v.startsWith(" ") && v.endsWith(" ") && v.trim() !== "") v = v.slice(1, -1);
      // A link may not contain a code entity, and empty entities are pointless: keep those literal.
      tokens.push(allowLinks && v.trim() !== "" ? { k: "code", v } : { k: "text", v: s.slice(i, close + len) });
      i = close + len;
      textStart = i;
      continue;
    }
    if (c === "[" && allowLinks) {
      if (nextBracket < i) nextBracket = indexOrEnd(s, "]", i + 1);
      const close = nextBracket;
      if (close < n && s[close + 1] === "(") {
        if (nextParen < close + 2) nextParen = indexOrEnd(s, ")", close + 2);
        const label = s.slice(i + 1, close);
        const href = s.slice(close + 2, nextParen).trim();
        if (nextParen < n && !label.includes("[") && label.trim() !== "" && SAFE_HREF.test(href)) {
          flush(i);
          tokens.push({ k: "link", href, children: tokenize(label, false) });
          i = nextParen + 1;
          textStart = i;
          continue;
        }
      }
      i++;
      continue;
    }
    if (c === "*" || c === "_" || c === "~") {
      let r = i;
      while (r < n && s[r] === c) r++;
      const len = r - i;
      const f = flanking(s, i, r);
      // "_" must not open or close inside a word (snake_case); "*" may.
      const canOpen = c === "_" ? f.left && (!f.right || f.prevP) : f.left;
      const canClose = c === "_" ? f.right && (!f.left || f.nextP) : f.right;
      const parts = c === "~" ? (len === 2 ? [2] : []) : len === 1 ? [1] : len === 2 ? [2] : len === 3 ? (canOpen ? [2, 1] : [1, 2]) : [];
      if (parts.length > 0 && (canOpen || canClose)) {
        flush(i);
        for (const p of parts) {
          const tag = c === "~" ? "s" : p === 2 ? "b" : "i";
          tokens.push({ k: "delim", tag, kind: c + p, raw: c.repeat(p), canOpen, canClose });
        }
        textStart = r;
      }
      i = r;
      continue;
    }
    i++;
  }
  flush(n);
  matchDelimiters(tokens);
  return tokens;
}

function indexOrEnd(s: string, ch: string, from: number): number {
  const j = s.indexOf(ch, from);
  return j < 0 ? s.length : j;
}

/** The start of the next run of exactly `len` backticks at or after `from`, or -1. */
function findTickRun(s: string, from: number, len: number): number {
  for (let j = s.indexOf("`", from); j >= 0; ) {
    let r = j;
    while (r < s.length && s[r] === "`") r++;
    if (r - j === len) return j;
    j = s.indexOf("`", r);
  }
  return -1;
}

/**
 * Pairs emphasis delimiters with a stack. A closer takes the nearest opener of
 * its kind and discards the openers above it, so pairs can never cross: that is
 * what keeps the emitted tags properly nested.
 */
function matchDelimiters(tokens: Token[]): void {
  const stack: number[] = [];
  const open = new Map<string, number>();
  tokens.forEach((t, idx) => {
    if (t.k !== "delim") return;
    if (t.canClose && (open.get(t.kind) ?? 0) > 0) {
      let j = stack.length - 1;
      while ((tokens[stack[j]!] as { kind: string }).kind !== t.kind) j--;
      const o = stack[j]!;
      for (const q of stack.splice(j)) {
        const kind = (tokens[q] as { kind: string }).kind;
        open.set(kind, open.get(kind)! - 1);
      }
      if (o < idx - 1) {
        (tokens[o] as { role?: string }).role = "open";
        t.role = "close";
        return;
      }
    }
    if (t.canOpen) {
      stack.push(idx);
      open.set(t.kind, (open.get(t.kind) ?? 0) + 1);
    }
  });
}

/**
 * Writes tokens as HTML. Tags are opened lazily, right before text, so no
 * empty entity is ever written; and since Telegram forbids code inside
 * bold/italic/strike, open emphasis is closed around a code span and reopened
 * after it.
 */
class Emitter {
  private readonly desired: string[] = [];
  private actual = 0;
  constructor(private readonly out: string[]) {}

  open(tag: string): void {
    this.desired.push(tag);
  }
  close(): void {
    const tag = this.desired.pop();
    if (this.actual > this.desired.length) {
      this.out.push(`</${tag}>`);
      this.actual--;
    }
  }
  private sync(): void {
    for (; this.actual < this.desired.length; this.actual++) this.out.push(`<${this.desired[this.actual]}>`);
  }
  private closeActual(): void {
    for (; this.actual > 0; this.actual--) this.out.push(`</${this.desired[this.actual - 1]}>`);
  }
  text(v: string): void {
    if (v === "") return;
    this.sync();
    this.out.push(escapeTelegramHtml(v));
  }
  emit(tokens: Token[]): void {
    for (const t of tokens) {
      if (t.k === "text") this.text(t.v);
      else if (t.k === "code") {
        this.closeActual();
        this.out.push(`<code>${escapeTelegramHtml(t.v)}</code>`);
      } else if (t.k === "link") {
        this.sync();
        this.out.push(`<a href="${escapeTelegramHtml(t.href)}">`);
        const inner = new Emitter(this.out);
        inner.emit(t.children);
        inner.finish();
        this.out.push("</a>");
      } else if (t.role === "open") this.open(t.tag);
      else if (t.role === "close") this.close();
      else this.text(t.raw);
    }
  }
  finish(): void {
    this.closeActual();
    this.desired.length = 0;
  }
}

function inline(s: string, wrap?: string): string {
  const out: string[] = [];
  const e = new Emitter(out);
  if (wrap) e.open(wrap);
  e.emit(tokenize(s, true));
  e.finish();
  return out.join("");
}

function codeBlock(body: string, lang: string): string {
  if (body.trim() === "") return escapeTelegramHtml(body);
  const code = escapeTelegramHtml(body);
  return SAFE_LANG.test(lang) ? `<pre><code class="language-${lang}">${code}</code></pre>` : `<pre>${code}</pre>`;
}

const HEADING = /^ {0,3}#{1,6}[ \t]+(.*)$/s;

/** Drops a heading's optional closing "###" (done by hand: a regex here backtracks quadratically). */
function headingText(s: string): string {
  const t = s.trimEnd();
  let k = t.length;
  while (k > 0 && t[k - 1] === "#") k--;
  return k < t.length && (k === 0 || t[k - 1] === " " || t[k - 1] === "\t") ? t.slice(0, k).trim() : t.trim();
}

/**
 * Converts the agent's Markdown to Telegram HTML: fenced code -> <pre>,
 * `code` -> <code>, **bold** and __bold__ -> <b>, *italic* and _italic_ -> <i>,
 * ~~strike~~ -> <s>, [text](http...) -> <a href>, # headings -> <b>.
 * Anything else, including raw HTML, is shown as typed.
 */
export function markdownToTelegramHtml(md: string): string {
  const out: string[] = [];
  const lines = md.split("\n");
  let para: string[] = [];
  const flush = () => {
    if (para.length > 0) out.push(inline(para.join("\n")));
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = parseFenceOpen(line);
    if (fence) {
      flush();
      let j = i + 1;
      while (j < lines.length && !isFenceClose(lines[j]!, fence.marker)) j++;
      out.push(codeBlock(lines.slice(i + 1, j).join("\n"), fence.lang));
      i = j;
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      flush();
      out.push(inline(headingText(heading[1]!), "b"));
    } else if (line.trim() === "") {
      flush();
      out.push("");
    } else para.push(line);
  }
  flush();
  return out.join("\n");
}
