/** Code fences as CommonMark reads them: where a fenced block opens, closes, and what it holds. */

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
