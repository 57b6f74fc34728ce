/**
 * Where a chunk may end, shared by the Markdown and the HTML chunker. A split
 * prefers the "largest" boundary inside the window: paragraph, then line,
 * then sentence end, then whitespace; a hard split happens only inside a
 * single over-long word, and never between the halves of a surrogate pair or
 * inside a grapheme cluster (emoji sequences). Boundaries are precomputed as
 * "last boundary at or before i" tables, so each chunk costs O(1) to place
 * and the whole split is O(n).
 */

const PARA = 0;
const LINE = 1;
const SENTENCE = 2;
const WORD = 3;
export const PROSE_LEVELS = [PARA, LINE, SENTENCE, WORD] as const;
// Sentence ends mean little in code; a blank line, a line or a space do.
export const CODE_LEVELS = [PARA, LINE, WORD] as const;

/** Horizontal whitespace: a word boundary. NBSP is deliberately absent (it means "don't break"). */
function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 13 || c === 11 || c === 12 || c === 0x3000 || (c >= 0x2000 && c <= 0x200a);
}
function isWs(c: number): boolean {
  return c === 10 || isSpace(c);
}
const SENTENCE_END = new Set([".", "!", "?", "…", "。", "！", "？"]);
const CJK_SENTENCE_END = new Set(["。", "！", "？"]);
const CLOSERS = new Set(['"', "'", ")", "]", "”", "’", "»", "*", "_"]);

/** The boundary level at position b (a split there ends the chunk before b), or -1. */
export function levelAt(text: string, b: number): number {
  const c = text.charCodeAt(b);
  if (c === 10) {
    let k = b + 1;
    while (k < text.length && isSpace(text.charCodeAt(k))) k++;
    return text.charCodeAt(k) === 10 ? PARA : LINE;
  }
  if (b === 0) return -1;
  const prev = text.charCodeAt(b - 1);
  if (isSpace(c)) {
    if (isWs(prev)) return -1;
    let k = b - 1;
    while (k > 0 && CLOSERS.has(text[k]!)) k--;
    return SENTENCE_END.has(text[k]!) ? SENTENCE : WORD;
  }
  return CJK_SENTENCE_END.has(text[b - 1]!) && !isWs(c) ? SENTENCE : -1;
}

export type Tables = Int32Array[];

/** For each level, last[level][i] = the last boundary <= i of that level that lies in `zone`, or -1. */
export function buildTables(text: string, zone: Uint8Array, want: number): Tables {
  const n = text.length;
  const tables = PROSE_LEVELS.map(() => new Int32Array(n + 1));
  const last = [-1, -1, -1, -1];
  for (let i = 0; i <= n; i++) {
    if (i < n && zone[i] === want) {
      const lvl = levelAt(text, i);
      if (lvl >= 0) last[lvl] = i;
    }
    for (let l = 0; l < 4; l++) tables[l]![i] = last[l]!;
  }
  return tables;
}

export function best(tables: Tables, levels: readonly number[], p: number, w: number): number {
  for (const l of levels) {
    const b = tables[l]![w]!;
    if (b > p) return b;
  }
  return -1;
}

const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;
let segmenter: Intl.Segmenter | undefined;

/** A split point in (p, w] that keeps grapheme clusters (and so surrogate pairs) whole. */
export function hardSplit(text: string, p: number, w: number): number {
  const lo = Math.max(p, w - 64);
  segmenter ??= new Intl.Segmenter("en", { granularity: "grapheme" });
  let b = -1;
  for (const s of segmenter.segment(text.slice(lo, Math.min(text.length, w + 1)))) {
    const at = lo + s.index;
    if (at > w) break;
    if (at > p) b = at;
  }
  // The segmenter did not see what precedes `lo`: the pair rule is the floor.
  if (b < 0) b = w;
  // Never inside an entity (Slack's escaped &amp; &lt; &gt;): each half would be shown as text.
  const amp = text.lastIndexOf("&", b - 1);
  if (amp > p && b - amp < 10 && amp + (/^&[#A-Za-z0-9]{1,8};/.exec(text.slice(amp, amp + 11))?.[0].length ?? 0) > b) b = amp;
  if (isHigh(text.charCodeAt(b - 1)) && isLow(text.charCodeAt(b))) b--;
  if (b <= p) throw new RangeError(`chunkText: limit too small to hold one character at offset ${p}`);
  return b;
}

/** Skips to where the next chunk starts: past blank lines, and past spaces when the split was mid-line. */
export function skipLeading(text: string, i: number, stop: number): number {
  let j = i;
  if (j > 0 && text.charCodeAt(j - 1) !== 10) while (j < stop && isSpace(text.charCodeAt(j))) j++;
  for (;;) {
    let k = j;
    while (k < stop && isSpace(text.charCodeAt(k))) k++;
    if (k >= stop) return stop;
    if (text.charCodeAt(k) !== 10) return j;
    j = k + 1;
  }
}

export function trimEndNewlines(s: string): string {
  let e = s.length;
  while (e > 0 && (s.charCodeAt(e - 1) === 10 || s.charCodeAt(e - 1) === 13)) e--;
  return s.slice(0, e);
}
