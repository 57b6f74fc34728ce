import { AgentError } from "./types.js";

/** A line longer than this is not an SSE stream from a chat server; stop before it eats memory. */
const MAX_BUFFER_CHARS = 4_000_000;

/**
 * Parses Server-Sent Events text into the `data` payload of each event.
 * Tolerant in the ways real servers differ: \n, \r\n or \r line ends,
 * `data:` with or without the space, comment lines (`: keep-alive`), other
 * fields ignored, and a last event that is not followed by a blank line.
 */
export async function* sseData(text: AsyncIterable<string>): AsyncGenerator<string> {
  let buf = "";
  let data: string[] = [];
  const line = (l: string): string | undefined => {
    if (l === "") {
      if (data.length === 0) return undefined;
      const out = data.join("\n");
      data = [];
      return out;
    }
    if (l.startsWith(":")) return undefined;
    const colon = l.indexOf(":");
    const field = colon < 0 ? l : l.slice(0, colon);
    if (field !== "data") return undefined;
    let value = colon < 0 ? "" : l.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    data.push(value);
    return undefined;
  };

  // Where the line-end search resumes, so a long line split over many reads is scanned once.
  let scanned = 0;
  for await (const chunk of text) {
    buf += chunk;
    let start = 0;
    for (;;) {
      const nl = nextLineEnd(buf, Math.max(start, scanned));
      if (nl === undefined) break;
      const out = line(buf.slice(start, nl.at));
      start = nl.at + nl.len;
      if (out !== undefined) yield out;
    }
    buf = buf.slice(start);
    scanned = Math.max(0, buf.length - 1);
    if (buf.length > MAX_BUFFER_CHARS) {
      throw new AgentError(
        "MalformedStream",
        "The model server sent an endless line instead of an event stream. Check that OPENAI_BASE_URL points at an OpenAI-compatible API.",
      );
    }
  }
  const last = line(buf.endsWith("\r") ? buf.slice(0, -1) : buf);
  if (last !== undefined) yield last;
  const rest = line("");
  if (rest !== undefined) yield rest;
}

function nextLineEnd(buf: string, from: number): { at: number; len: number } | undefined {
  for (let i = from; i < buf.length; i++) {
    const c = buf.charCodeAt(i);
    if (c === 10) return { at: i, len: 1 };
    if (c === 13) {
      // A \r at the very end may be the first half of \r\n split across reads: wait for more.
      if (i + 1 >= buf.length) return undefined;
      return { at: i, len: buf.charCodeAt(i + 1) === 10 ? 2 : 1 };
    }
  }
  return undefined;
}
