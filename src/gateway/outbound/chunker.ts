/**
 * Splits agent output into messages that fit a platform's length limit
 * (Telegram 4096, Discord 2000 UTF-16 code units).
 *
 * A split prefers the "largest" boundary inside the window: paragraph, then
 * line, then sentence end, then whitespace; a hard split happens only inside a
 * single over-long word, and never between the halves of a surrogate pair or
 * inside a grapheme cluster (emoji sequences). Code fences are atomic; a fence
 * that alone exceeds the limit is closed at the end of each piece and reopened
 * (same info string) at the start of the next, with those lines counted in the
 * limit.
 *
 * Boundaries are precomputed as "last boundary at or before i" tables, so each
 * chunk costs O(1) to place and the whole split is O(n).
 */

/** A fenced code block, as offsets into the text. */
export interface Fence {
  /** Start of the opening fence line (including its indentation). */
  start: number;
  /** First character of the body (after the opening line's newline). */
  bodyStart: number;
  /** End of the body: the newline before the closing line (or the text end). */
  bodyEnd: number;
  /** End of the closing fence line: its newline, or the text end. */
  end: number;
  /** The opening line, without trailing whitespace. */
  openLine: string;
  /** A closing line valid for this fence: the opening character run. */
  marker: string;
  /** The language tag (first word of the info string), possibly "". */
  lang: string;
  closed: boolean;
}

// Greedy `.*` then trim in code: a lazy info string before trailing blanks backtracks quadratically.
const OPEN_RE = /^[ \t]*(`{3,}|~{3,})(.*)$/s;
const CLOSE_RE = /^[ \t]*(`{3,}|~{3,})[ \t\r]*$/;

/** Parses a line as an opening fence; backtick fences may not have a backtick in the info string (CommonMark). */
export function parseFenceOpen(line: string): { marker: string; lang: string } | null {
  const m = OPEN_RE.exec(line);
  if (!m) return null;
  const marker = m[1] ?? "";
  const info = (m[2] ?? "").trim();
  if (marker.startsWith("`") && info.includes("`")) return null;
  return { marker, lang: info.split(/\s/, 1)[0] ?? "" };
}

/** Whether a line closes a fence opened with `marker` (same character, at least as long). */
export function isFenceClose(line: string, marker: string): boolean {
  const m = CLOSE_RE.exec(line);
  const run = m?.[1];
  return run !== undefined && run[0] === marker[0] && run.length >= marker.length;
}

/** Finds the fenced code blocks of a text; an unclosed fence runs to the end. */
export function scanFences(text: string): Fence[] {
  const fences: Fence[] = [];
  const n = text.length;
  let open: { start: number; bodyStart: number; openLine: string; marker: string; lang: string } | null = null;
  for (let i = 0; i <= n; ) {
    let j = text.indexOf("\n", i);
    if (j < 0) j = n;
    const line = text.slice(i, j);
    if (open === null) {
      const f = parseFenceOpen(line);
      if (f) open = { start: i, bodyStart: Math.min(j + 1, n), openLine: line.trimEnd(), ...f };
    } else if (isFenceClose(line, open.marker)) {
      fences.push({ ...open, bodyEnd: Math.max(open.bodyStart, i - 1), end: j, closed: true });
      open = null;
    }
    i = j + 1;
  }
  if (open) fences.push({ ...open, bodyEnd: n, end: n, closed: false });
  return fences;
}

const PARA = 0;
const LINE = 1;
const SENTENCE = 2;
const WORD = 3;
const PROSE_LEVELS = [PARA, LINE, SENTENCE, WORD] as const;
// Sentence ends mean little in code; a blank line, a line or a space do.
const CODE_LEVELS = [PARA, LINE, WORD] as const;

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
function levelAt(text: string, b: number): number {
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

type Tables = Int32Array[];

/** For each level, last[level][i] = the last boundary <= i of that level that lies in `zone`, or -1. */
function buildTables(text: string, zone: Uint8Array, want: number): Tables {
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

function best(tables: Tables, levels: readonly number[], p: number, w: number): number {
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
function hardSplit(text: string, p: number, w: number): number {
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
function skipLeading(text: string, i: number, stop: number): number {
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

function trimEndNewlines(s: string): string {
  let e = s.length;
  while (e > 0 && (s.charCodeAt(e - 1) === 10 || s.charCodeAt(e - 1) === 13)) e--;
  return s.slice(0, e);
}

/** The opening line to repeat on each piece of a split fence, shortened if the limit is tiny; null if none fits. */
function fenceHeader(f: Fence, limit: number): string | null {
  for (const h of [f.openLine, f.openLine.trimStart(), f.marker + f.lang, f.marker]) {
    if (limit - h.length - f.marker.length - 2 >= 2) return h;
  }
  return null;
}

/**
 * Splits `text` into chunks of at most `limit` UTF-16 units. Chunks (a short
 * text's single chunk included) lose leading blank lines and trailing
 * whitespace; indentation is kept. Blank input gives []. Fence-aware splitting
 * needs room for the fence lines (limit >= about 2 x marker + 6); below that a
 * fence is split like plain text. Throws RangeError if `limit` is not a
 * positive integer, or is too small to hold one surrogate pair of the text.
 */
export function chunkText(text: string, limit: number): string[] {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`chunkText: limit must be a positive integer, got ${limit}`);
  const first = skipLeading(text, 0, text.length);
  const trimmed = text.slice(first).trimEnd();
  if (trimmed === "") return [];
  if (trimmed.length <= limit) return [trimmed];

  let fences = scanFences(text);
  const tail = fences.at(-1);
  if (tail && !tail.closed) {
    // Close a dangling fence so every chunk stays balanced.
    text = `${text.trimEnd()}\n${tail.marker}`;
    fences = scanFences(text);
  }
  const n = text.length;
  const end = text.trimEnd().length;

  // Zones: 0 = prose, 1 = fence lines, 2 = fence body interior.
  const zone = new Uint8Array(n);
  for (const f of fences) {
    zone.fill(1, f.start + 1, f.end);
    zone.fill(2, f.bodyStart, f.bodyEnd);
  }
  const prose = buildTables(text, zone, 0);
  const code = buildTables(text, zone, 2);

  const chunks: string[] = [];
  const push = (s: string) => {
    if (s.trim() !== "") chunks.push(s);
  };
  let fi = 0;
  let p = first;
  let inFence: { f: Fence; header: string } | null = null;

  while (p < end) {
    while (fi < fences.length && fences[fi]!.end < p) fi++;
    const f = fences[fi];

    if (inFence === null && f && p === f.start && f.end - p > limit) {
      const header = fenceHeader(f, limit);
      const hasBody = text.slice(f.bodyStart, f.bodyEnd).trim() !== "";
      if (header !== null && hasBody) {
        inFence = { f, header };
        p = skipLeading(text, f.bodyStart, f.bodyEnd);
      }
    }

    const prefix = inFence ? `${inFence.header}\n` : "";
    const budget = limit - prefix.length;
    if (end - p <= budget) {
      push(prefix + text.slice(p, end));
      break;
    }

    if (inFence && inFence.f.end - p > budget) {
      // The rest of this fence does not fit: emit one closed piece of it.
      const { f: cur, header } = inFence;
      const room = limit - prefix.length - 1 - cur.marker.length;
      const w = p + room;
      let b = cur.bodyEnd;
      if (w < cur.bodyEnd) {
        b = best(code, CODE_LEVELS, p, w);
        if (b < 0) b = hardSplit(text, p, w);
      }
      chunks.push(`${prefix + trimEndNewlines(text.slice(p, b))}\n${cur.marker}`);
      p = skipLeading(text, b, cur.bodyEnd);
      if (p >= cur.bodyEnd) {
        // Only the closing line is left, and the piece just sent closed the fence already.
        inFence = null;
        p = skipLeading(text, cur.end, n);
      }
      continue;
    }

    const w = p + budget;
    const found = best(prose, PROSE_LEVELS, p, w);
    const b = found >= 0 ? found : hardSplit(text, p, w);
    push(prefix + text.slice(p, b).trimEnd());
    inFence = null;
    p = skipLeading(text, b, n);
  }
  return chunks;
}

// ---------------------------------------------------------------------------
// Rendered HTML (Telegram): split outside tags and entities, and keep every
// chunk well formed by closing the tags open at the split and reopening them
// at the start of the next chunk (the HTML counterpart of a split fence).

interface Tag {
  start: number;
  end: number;
  /** Lower-case tag name. */
  name: string;
  close: boolean;
  /** The tag as written (reopened verbatim: attributes such as href or class survive). */
  raw: string;
}

const TAG_RE = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)[^<>]*>/g;
const ENTITY_RE = /&(?:#[0-9]{1,7}|#x[0-9a-fA-F]{1,6}|[a-zA-Z][a-zA-Z0-9]{0,31});/g;
const EMPTY_PAIR = /<([a-zA-Z][a-zA-Z0-9-]*)(?:\s[^<>]*)?>(\s*)<\/\1>/g;

function dropEmptyPairs(s: string): string {
  for (let prev = ""; prev !== s; ) {
    prev = s;
    s = s.replace(EMPTY_PAIR, "$2");
  }
  return s;
}

const closing = (stack: readonly Tag[]) =>
  stack
    .map((t) => `</${t.name}>`)
    .reverse()
    .join("");

/**
 * Splits rendered HTML into chunks of at most `limit` UTF-16 units, never
 * inside a tag or an entity; tags open at a split are closed at the end of
 * the chunk and reopened (as written) at the start of the next, counted in
 * the limit. Boundaries are preferred as in chunkText: paragraph, line,
 * sentence, word. Assumes well-formed input (what the renderers write).
 */
export function chunkHtml(html: string, limit: number): string[] {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`chunkHtml: limit must be a positive integer, got ${limit}`);
  const trimmed = html.trim();
  if (trimmed === "") return [];
  if (trimmed.length <= limit) return [trimmed];
  const text = trimmed;
  const n = text.length;
  // Zones: 0 = text (splittable), 1 = inside a tag or an entity.
  const zone = new Uint8Array(n);
  const tags: Tag[] = [];
  for (const m of text.matchAll(TAG_RE)) {
    zone.fill(1, m.index + 1, m.index + m[0].length);
    tags.push({ start: m.index, end: m.index + m[0].length, name: m[2]!.toLowerCase(), close: m[1] === "/", raw: m[0] });
  }
  for (const m of text.matchAll(ENTITY_RE)) zone.fill(1, m.index + 1, m.index + m[0].length);
  const tables = buildTables(text, zone, 0);
  // A hard split lands on a text position; one inside a tag or entity moves back to its start.
  const settle = (b: number, p: number): number => {
    let k = b;
    while (k > p && zone[k] === 1) k--;
    return k;
  };

  const chunks: string[] = [];
  let stack: Tag[] = [];
  let ti = 0;
  let p = 0;
  const stackAt = (from: number, to: number): { stack: Tag[]; ti: number } => {
    const s = [...stack];
    let i = from;
    while (i < tags.length && tags[i]!.start < to) {
      const t = tags[i]!;
      if (t.close) {
        const j = s.map((x) => x.name).lastIndexOf(t.name);
        if (j >= 0) s.splice(j, 1);
      } else s.push(t);
      i++;
    }
    return { stack: s, ti: i };
  };

  while (p < n) {
    const prefix = stack.map((t) => t.raw).join("");
    if (prefix.length + (n - p) + 0 <= limit) {
      const last = dropEmptyPairs(prefix + text.slice(p));
      if (last.trim() !== "") chunks.push(last);
      break;
    }
    let w = p + limit - prefix.length - closing(stack).length;
    let b = -1;
    let after: { stack: Tag[]; ti: number } = { stack, ti };
    for (let tries = 0; tries < 64; tries++) {
      if (w <= p) throw new RangeError(`chunkHtml: limit ${limit} too small for the tags open at offset ${p}`);
      const found = best(tables, PROSE_LEVELS, p, Math.min(w, n - 1));
      b = found >= 0 ? found : settle(hardSplit(text, p, Math.min(w, n - 1)), p);
      // A single tag longer than the room cannot be split without breaking it.
      if (b <= p) throw new RangeError(`chunkHtml: limit ${limit} too small for the tag at offset ${p}`);
      after = stackAt(ti, b);
      const size = prefix.length + (b - p) + closing(after.stack).length;
      if (size <= limit) break;
      w -= size - limit;
    }
    const body = text.slice(p, b).trimEnd();
    const chunk = dropEmptyPairs(prefix + body + closing(after.stack));
    if (chunk.trim() !== "") chunks.push(chunk);
    stack = after.stack;
    ti = after.ti;
    p = skipLeading(text, b, n);
    // Tags between the split point and the next chunk's first character (after skipped blanks) still count.
    const moved = stackAt(ti, p);
    stack = moved.stack;
    ti = moved.ti;
  }
  return chunks;
}
