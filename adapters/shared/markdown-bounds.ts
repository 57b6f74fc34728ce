/**
 * Bounds on what parsing the agent's Markdown may cost, so no reply can
 * overflow the stack or hold the event loop (issue 26, item 7):
 *
 * - Nesting: marked parses each block quote and list level by recursion, and
 *   a list nested by indentation costs far more than linear per level
 *   (2,000 levels took over 80 s; 4,000 `>` overflowed the stack). A
 *   pre-pass caps the containers a line opens at MAX_NESTING and the
 *   indentation before a nested marker at MAX_INDENT columns; markers past
 *   the cap are escaped, so they are shown as typed, inside the deepest
 *   level kept.
 * - Inline scans: marked looks for the closer of every `_`, `*`, `~`, `` ` ``,
 *   `[` and `<` to the end of the paragraph, so text full of openers that
 *   never close (`_a` × 8,000) costs its length times their number. The
 *   tokenizer counts those scans (the characters each one may read) and,
 *   once a render has spent INLINE_WORK_BUDGET, stops looking: the rest of
 *   the openers are text. Ordinary replies spend a small part of it.
 * - Bare e-mail addresses: GFM's autolink for them looks for an `@` after
 *   every run of address characters, at every stop of the text scanner
 *   (each `_` or `*`), to the end of the run: `_a` × 8,000 spent a second
 *   there. Those two patterns are dropped from the lexer's rules; an
 *   address stays text, which all three platforms link by themselves.
 */
import { Lexer, type Token, Tokenizer, type Tokens } from "marked";

/** Block quotes and list levels one line may open; deeper markers are text. Platforms show 1-3 levels. */
export const MAX_NESTING = 12;
/** Columns of indentation before a nested marker; deeper items join the deepest level kept. */
export const MAX_INDENT = 24;
/** Characters the inline scans of one render may read, beyond the first 20 per character of input. */
export const INLINE_WORK_BUDGET = 2_000_000;

/** What one render cost: `inlineWork` counts the characters the inline scans may have read. */
export interface RenderStats {
  inlineWork: number;
  /** Lines whose nesting the pre-pass cut. */
  cutLines: number;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/** The Markdown with every line's container nesting cut to the bounds (fenced code untouched). */
export function limitNesting(md: string, stats?: RenderStats): string {
  const lines = md.split("\n");
  let fence: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const f = FENCE.exec(line)?.[1];
    if (fence !== undefined) {
      if (f && f[0] === fence[0] && f.length >= fence.length && line.trim() === f) fence = undefined;
      continue;
    }
    if (f) {
      fence = f;
      continue;
    }
    const cut = limitLine(line);
    if (cut !== line) {
      lines[i] = cut;
      if (stats) stats.cutLines++;
    }
  }
  return lines.join("\n");
}

/** Length of the container marker at `i` (`>`, a bullet or `3.` followed by a blank or the end), or 0. */
function markerAt(line: string, i: number): number {
  const c = line[i];
  if (c === ">") return 1;
  let j = i;
  if (c === "-" || c === "+" || c === "*") j++;
  else {
    while (j < line.length && j - i < 9 && line[j]! >= "0" && line[j]! <= "9") j++;
    if (j === i || (line[j] !== "." && line[j] !== ")")) return 0;
    j++;
  }
  const next = line[j];
  return next === undefined || next === " " || next === "\t" ? j - i : 0;
}

/**
 * One line: walks its container prefix (blanks, `>`, list markers) by index, without copying,
 * clamping the indentation past MAX_INDENT and escaping the marker past MAX_NESTING.
 */
function limitLine(line: string): string {
  let out = "";
  let pos = 0;
  let depth = 0;
  let cols = 0;
  for (;;) {
    const wsStart = pos;
    let width = 0;
    while (line[pos] === " " || line[pos] === "\t") width += line[pos++] === "\t" ? 4 : 1;
    const m = markerAt(line, pos);
    if (m === 0) return out === "" ? line : out + line.slice(wsStart);
    // Indentation is what nests a list across lines: past the cap, the item joins the deepest level kept.
    const ws = cols + width > MAX_INDENT ? " ".repeat(Math.max(0, MAX_INDENT - cols)) : line.slice(wsStart, pos);
    cols += (ws.length === pos - wsStart ? width : ws.length) + m;
    const marker = line.slice(pos, pos + m);
    if (++depth > MAX_NESTING) return `${out}${ws}${marker.slice(0, -1)}\\${marker.slice(-1)}${line.slice(pos + m)}`;
    out += ws + marker;
    pos += m;
  }
}

const OPENERS: Record<string, string> = { emStrong: "*_", codespan: "`", del: "~", link: "[!", reflink: "[!", tag: "<", autolink: "<" };

/** marked's tokenizer, with the inline scans that may read to the paragraph's end counted and capped. */
class BoundedTokenizer extends Tokenizer {
  readonly #budget: number;
  constructor(
    readonly stats: RenderStats,
    inputLength: number,
  ) {
    super();
    this.#budget = INLINE_WORK_BUDGET + 20 * inputLength;
  }

  /** A scan that found its closer read what it took; one that did not may have read to the end. */
  charge(src: string, found: { raw: string } | undefined | false): void {
    this.stats.inlineWork += found ? found.raw.length : src.length;
  }

  get exhausted(): boolean {
    return this.stats.inlineWork > this.#budget;
  }
}

type Scan = (src: string, ...rest: never[]) => Tokens.Generic | undefined | false;

for (const kind of Object.keys(OPENERS)) {
  const proto = Tokenizer.prototype as unknown as Record<string, Scan>;
  const original = proto[kind]!;
  (BoundedTokenizer.prototype as unknown as Record<string, Scan>)[kind] = function (this: BoundedTokenizer, src: string, ...rest: never[]) {
    // Only a scan that starts at its opener can read far; every other call is one anchored test.
    if (!OPENERS[kind]!.includes(src[0] ?? "")) return original.call(this, src, ...rest);
    if (this.exhausted) return undefined;
    const found = original.call(this, src, ...rest);
    this.charge(src, found);
    return found;
  };
}

const EMAIL_CLASS = "[a-zA-Z0-9.!#$%&'*+\\/=?_`{\\|}~-]";
const EMAIL_URL = "|^[A-Za-z0-9._+-]+(@)[a-zA-Z0-9-_]+(?:\\.[a-zA-Z0-9-_]*[a-zA-Z0-9])+(?![\\w-])";
const EMAIL_STOPS = [`|(?=${EMAIL_CLASS}+@)`, `|[^a-zA-Z0-9.!#$%&'*+\\/=?_\`{\\|}~-](?=${EMAIL_CLASS}+@)`];

function withoutEmailScans(): { rules: Tokenizer["rules"]; removed: boolean } {
  const gfm = (new Lexer({ gfm: true }) as unknown as { tokenizer: Tokenizer }).tokenizer.rules;

  const url = gfm.inline.url.source.replace(EMAIL_URL, "");
  const text = EMAIL_STOPS.reduce((s, stop) => s.replace(stop, ""), gfm.inline.text.source);
  const removed = url !== gfm.inline.url.source && text.length === gfm.inline.text.source.length - EMAIL_STOPS.join("").length;
  return { rules: { ...gfm, inline: { ...gfm.inline, url: new RegExp(url), text: new RegExp(text) } }, removed };
}

const GFM_RULES = withoutEmailScans();
/** False if marked's patterns changed under us (a test checks it, so an upgrade cannot bring the scans back unseen). */
export const EMAIL_SCANS_REMOVED = GFM_RULES.removed;

/** marked's lexer (CommonMark + GFM) on the Markdown cut to the bounds above. */
export function lexBounded(md: string, stats: RenderStats = { inlineWork: 0, cutLines: 0 }): Token[] {
  const src = limitNesting(md.replace(/\r\n?/g, "\n"), stats);
  const lexer = new Lexer({ gfm: true, tokenizer: new BoundedTokenizer(stats, src.length) });
  if (GFM_RULES.removed) (lexer as unknown as { tokenizer: Tokenizer }).tokenizer.rules = GFM_RULES.rules;
  return lexer.lex(src);
}
