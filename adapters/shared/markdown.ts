/**
 * The agent's Markdown, parsed once by marked's lexer (CommonMark + GFM) and
 * written out in a platform's own format by a Dialect: Telegram HTML
 * (adapters/telegram/format.ts), Slack mrkdwn (adapters/slack/format.ts),
 * Discord markdown (adapters/discord/format.ts).
 *
 * What the parser does not turn into structure is text, and every dialect
 * escapes text for its platform, so whatever the agent (or a user quoted by
 * it) writes — raw HTML, stray asterisks, `<!channel>` — is shown as typed
 * and never breaks the platform's parser. Tables, which none of the three
 * platforms has, become aligned monospace blocks.
 */
import type { Token, Tokens } from "marked";
import { lexBounded, type RenderStats } from "./markdown-bounds.js";

export type { RenderStats } from "./markdown-bounds.js";

export interface Dialect {
  /** Literal text, escaped for the platform. */
  text(s: string): string;
  strong(inner: string): string;
  em(inner: string): string;
  del(inner: string): string;
  /** An inline code span (the raw code, not yet escaped). */
  code(s: string): string;
  /** A link; `label` is the rendered label, `plain` its text only. */
  link(href: string, label: string, plain: string): string;
  heading(inner: string, depth: number): string;
  /** A fenced or indented code block (raw code, not yet escaped). */
  codeBlock(code: string, lang: string): string;
  /** A block quote around already rendered blocks; depth 0 is the outermost. */
  quote(inner: string, depth: number): string;
  hr(): string;
  /** How nested list levels are indented. */
  indent: string;
  /** A list item's marker (default: • ◦ ▪ by depth, or "3."). */
  bullet?(depth: number, ordered: boolean, n: number): string;
}

const BULLETS = ["•", "◦", "▪"];

/** Only links a reader can safely follow become links; others stay text. */
const SAFE_HREF = /^(https?:\/\/|mailto:|tg:\/\/)[^\s<>"]+$/i;

export function safeHref(href: string): boolean {
  return SAFE_HREF.test(href);
}

interface Ctx {
  quoteDepth: number;
  listDepth: number;
}

/**
 * One line of prose that no Markdown rule can read as structure: it starts
 * with a letter (no list, heading, quote or indented code), and holds only
 * letters, digits, spaces and punctuation that marks nothing up on its own
 * (no `*~` or backtick, no brackets, `<`, `&`, `\\`, `|` or `#`, and no
 * `/`, `@` or "www." that an autolink needs); an underscore only inside a
 * word (a letter or digit each side: CommonMark lets such an `_` neither
 * open nor close emphasis, as in snake_case). marked makes it one paragraph
 * of one text token, so the dialect's escaping alone writes what the full
 * render writes (a property test compares the two). Most short replies are
 * such a line, and the lexer was most of their rendering's CPU (issue 31).
 */
const PLAIN_LINE = /^\p{L}(?:[\p{L}\p{N} ,.:;?!'"()+=-]|(?<=[\p{L}\p{N}])_(?=[\p{L}\p{N}]))*$/u;
const AUTOLINK_START = /www\./i;

export function isPlainLine(md: string): boolean {
  return PLAIN_LINE.test(md) && !AUTOLINK_START.test(md);
}

/** `stats`, when given, is told what the render cost (see markdown-bounds.ts). */
export function renderMarkdown(md: string, d: Dialect, stats?: RenderStats): string {
  return isPlainLine(md) ? d.text(md).trim() : renderParsed(md, d, stats);
}

/** The render through marked's lexer, whatever the text (what a plain line's shortcut must equal). */
export function renderParsed(md: string, d: Dialect, stats?: RenderStats): string {
  return blocks(lexBounded(md, stats), d, { quoteDepth: 0, listDepth: 0 }).trim();
}

/**
 * The Markdown shown exactly as written, escaped for the platform: what a
 * reply becomes when rendering it failed. No parser, only the dialect's
 * escaping, so it cannot fail the way a render can.
 */
export function literalMarkdown(md: string, d: Dialect): string {
  return d.text(md.replace(/\r\n?/g, "\n")).trim();
}

function blocks(tokens: Token[], d: Dialect, ctx: Ctx, tight = false): string {
  const out: string[] = [];
  for (const t of tokens) {
    const s = block(t, d, ctx);
    if (s !== undefined && s !== "") out.push(s);
  }
  return out.join(tight ? "\n" : "\n\n");
}

function block(t: Token, d: Dialect, ctx: Ctx): string | undefined {
  switch (t.type) {
    case "space":
    case "def":
      return undefined;
    case "paragraph":
      return inline((t as Tokens.Paragraph).tokens, d);
    case "text": {
      const x = t as Tokens.Text;
      return x.tokens ? inline(x.tokens, d) : d.text(x.text);
    }
    case "heading":
      return d.heading(inline((t as Tokens.Heading).tokens, d), (t as Tokens.Heading).depth);
    case "code": {
      const c = t as Tokens.Code;
      return d.codeBlock(c.text, (c.lang ?? "").split(/\s/, 1)[0] ?? "");
    }
    case "blockquote": {
      const inner = blocks((t as Tokens.Blockquote).tokens, d, { ...ctx, quoteDepth: ctx.quoteDepth + 1 });
      return d.quote(inner, ctx.quoteDepth);
    }
    case "list":
      return list(t as Tokens.List, d, ctx);
    case "table":
      return table(t as Tokens.Table, d);
    case "hr":
      return d.hr();
    case "html":
      // Raw HTML is shown as typed, never interpreted.
      return d.text((t as Tokens.HTML).text.replace(/\n+$/, ""));
    default: {
      const raw = (t as { raw?: string }).raw;
      return raw ? d.text(raw.trim()) : undefined;
    }
  }
}

function list(l: Tokens.List, d: Dialect, ctx: Ctx): string {
  const start = typeof l.start === "number" ? l.start : 1;
  const pad = d.indent.repeat(ctx.listDepth);
  const lines = l.items.map((item, i) => {
    const marker = d.bullet
      ? d.bullet(ctx.listDepth, l.ordered, start + i)
      : d.text(l.ordered ? `${start + i}.` : BULLETS[Math.min(ctx.listDepth, BULLETS.length - 1)]!);
    const box = item.task ? (item.checked ? "☑ " : "☐ ") : "";
    const content = item.tokens.filter((x) => x.type !== "checkbox");
    const body = blocks(content, d, { ...ctx, listDepth: ctx.listDepth + 1 }, !l.loose);
    // Continuation lines of the item (not its nested lists, which carry their own indent) line up under the text.
    const [first = "", ...rest] = body.split("\n");
    const cont = pad + d.indent;
    return `${pad}${marker} ${box}${first}${rest.map((r) => `\n${r.startsWith(cont) || r === "" ? r : cont + r}`).join("")}`;
  });
  return lines.join(l.loose ? "\n\n" : "\n");
}

/** A table as an aligned monospace block: none of the platforms renders Markdown tables. */
function table(t: Tokens.Table, d: Dialect): string {
  const cell = (c: Tokens.TableCell) => plain(c.tokens).replace(/\s+/g, " ").trim();
  const rows = [t.header.map(cell), ...t.rows.map((r) => r.map(cell))];
  const cols = Math.max(...rows.map((r) => r.length));
  const width = Array.from({ length: cols }, (_, i) => Math.max(1, ...rows.map((r) => [...(r[i] ?? "")].length)));
  const line = (r: string[]) =>
    width
      .map((w, i) => {
        const v = r[i] ?? "";
        const gap = " ".repeat(w - [...v].length);
        return t.align[i] === "right" ? gap + v : v + gap;
      })
      .join(" | ")
      .trimEnd();
  const out = [line(rows[0]!), width.map((w) => "-".repeat(w)).join("-+-"), ...rows.slice(1).map(line)];
  return d.codeBlock(out.join("\n"), "");
}

function inline(tokens: Token[] | undefined, d: Dialect): string {
  if (!tokens) return "";
  let out = "";
  for (const t of tokens) {
    switch (t.type) {
      case "text": {
        const x = t as Tokens.Text;
        out += x.tokens ? inline(x.tokens, d) : d.text(x.text);
        break;
      }
      case "escape":
        out += d.text((t as Tokens.Escape).text);
        break;
      case "strong":
        out += wrap((t as Tokens.Strong).tokens, d, d.strong);
        break;
      case "em":
        out += wrap((t as Tokens.Em).tokens, d, d.em);
        break;
      case "del":
        out += wrap((t as Tokens.Del).tokens, d, d.del);
        break;
      case "codespan":
        out += d.code((t as Tokens.Codespan).text);
        break;
      case "br":
        out += "\n";
        break;
      case "link": {
        const l = t as Tokens.Link;
        const label = inline(l.tokens, d);
        out += safeHref(l.href) ? d.link(l.href, label, plain(l.tokens)) : label;
        break;
      }
      case "image": {
        const img = t as Tokens.Image;
        const alt = img.text || "image";
        out += safeHref(img.href) ? d.link(img.href, d.text(alt), alt) : d.text(alt);
        break;
      }
      default:
        // html (inline tags) and anything newer: literal text.
        out += d.text((t as { raw?: string }).raw ?? "");
    }
  }
  return out;
}

function wrap(tokens: Token[] | undefined, d: Dialect, f: (s: string) => string): string {
  const inner = inline(tokens, d);
  return inner.trim() === "" ? inner : f(inner);
}

/**
 * A notice's mark (see each format's NOTICE_MARKS) put before its rendered
 * text, so error, warning and success look different from a reply. A text
 * that opens with a block (code, quote, list, heading) starts on the next
 * line, where the block still parses as one.
 */
export function withMark(mark: string | undefined, rendered: string): string {
  if (!mark) return rendered;
  return /^(```|>|&gt;|#|[-\u2022\u25e6\u25aa] |\d+\. |<pre|<blockquote)/.test(rendered) ? `${mark}\n${rendered}` : `${mark} ${rendered}`;
}

/** The text of inline tokens, without any formatting. */
export function plain(tokens: Token[] | undefined): string {
  if (!tokens) return "";
  return tokens
    .map((t) => {
      const x = t as { tokens?: Token[]; text?: string; raw?: string };
      if (t.type === "br") return "\n";
      if (x.tokens) return plain(x.tokens);
      return x.text ?? x.raw ?? "";
    })
    .join("");
}
