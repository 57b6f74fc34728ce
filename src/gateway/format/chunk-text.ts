/**
 * Splits agent output (Markdown, or text as written) into messages that fit a
 * platform's length limit (Telegram 4096, Discord 2000 UTF-16 code units),
 * at the boundaries of boundaries.ts. Code fences are atomic; a fence that
 * alone exceeds the limit is closed at the end of each piece and reopened
 * (same info string) at the start of the next, with those lines counted in
 * the limit.
 */
import { best, buildTables, CODE_LEVELS, hardSplit, PROSE_LEVELS, skipLeading, type Tables, trimEndNewlines } from "./boundaries.js";
import { type Fence, scanFences } from "./fences.js";

export { scanFences, type Fence } from "./fences.js";

/** The opening line to repeat on each piece of a split fence, shortened if the limit is tiny; null if none fits. */
function fenceHeader(f: Fence, limit: number): string | null {
  for (const h of [f.openLine, f.openLine.trimStart(), f.marker + f.lang, f.marker]) {
    if (limit - h.length - f.marker.length - 2 >= 2) return h;
  }
  return null;
}

/** The rest of fence `f` from `p` does not fit: one closed piece of it, and where the next piece starts. */
function fencePiece(text: string, code: Tables, f: Fence, p: number, prefix: string, limit: number): { chunk: string; next: number } {
  const w = p + limit - prefix.length - 1 - f.marker.length;
  let b = f.bodyEnd;
  if (w < f.bodyEnd) {
    b = best(code, CODE_LEVELS, p, w);
    if (b < 0) b = hardSplit(text, p, w);
  }
  return { chunk: `${prefix + trimEndNewlines(text.slice(p, b))}\n${f.marker}`, next: skipLeading(text, b, f.bodyEnd) };
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
      const piece = fencePiece(text, code, inFence.f, p, prefix, limit);
      chunks.push(piece.chunk);
      p = piece.next;
      if (p >= inFence.f.bodyEnd) {
        // Only the closing line is left, and the piece just sent closed the fence already.
        p = skipLeading(text, inFence.f.end, n);
        inFence = null;
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
