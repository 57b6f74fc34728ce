/**
 * Rendered HTML (Telegram): split outside tags and entities, and keep every
 * chunk well formed by closing the tags open at the split and reopening them
 * at the start of the next chunk (the HTML counterpart of a split fence).
 */
import { best, buildTables, hardSplit, PROSE_LEVELS, skipLeading } from "./boundaries.js";

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
