import type { ReplyAddress } from "../../runtime/events.js";
import type { Adapter } from "../adapter.js";
import type { SentMessage } from "../contract.js";
import { isAdapterError } from "../contract.js";
import { chunkText } from "./chunker.js";

/** A reply's chunks as the platform gets them: rendered by the adapter's format, then split at its limit. */
export function chunksOf(adapter: Adapter, markdown: string): string[] {
  return adapter.format ? adapter.format.chunks(markdown) : chunkText(markdown, adapter.limits.maxTextLength);
}

/**
 * Sends one rendered chunk. A refusal of the text itself never loses it: a
 * chunk refused as too long is split smaller and each piece sent (a few
 * rounds at most), one refused for its formatting is sent as plain text.
 * Only the first piece quotes the user's message. Returns the first piece's
 * message.
 */
export async function sendChunk(
  adapter: Adapter,
  to: ReplyAddress,
  chunk: string,
  key: string,
  onRefused?: (why: "too-long" | "bad-format") => void,
  depth = 0,
  plain = false,
): Promise<SentMessage> {
  try {
    return await adapter.sink.send(to, chunk, { idempotencyKey: key, ...(plain && { plain }) });
  } catch (err) {
    const format = adapter.format;
    if (!format || !isAdapterError(err, "Rejected") || err.reason === undefined) throw err;
    onRefused?.(err.reason);
    if (err.reason === "bad-format" && !plain) return adapter.sink.send(to, format.plain(chunk), { idempotencyKey: `${key}p`, plain: true });
    if (err.reason !== "too-long" || depth >= 3) throw err;
    const half = Math.max(1, Math.floor(chunk.length / 2));
    let pieces: string[] = [];
    try {
      if (!plain) pieces = format.split(chunk, half);
    } catch {
      // A tag longer than half the chunk cannot be split as rendered: the plain text can.
    }
    if (pieces.length < 2) {
      pieces = chunkText(plain ? chunk : format.plain(chunk), half);
      plain = true;
    }
    let first: SentMessage | undefined;
    for (const [j, piece] of pieces.entries()) {
      const sent = await sendChunk(adapter, j === 0 ? to : { ...to, replyToMessageId: undefined }, piece, `${key}.${j}`, onRefused, depth + 1, plain);
      first ??= sent;
    }
    if (!first) throw err;
    return first;
  }
}

/** Edits a message to a rendered chunk; one the platform cannot parse is written as plain text instead. */
export async function editChunk(adapter: Adapter, to: ReplyAddress, messageId: string, chunk: string): Promise<void> {
  try {
    await adapter.sink.edit(to, messageId, chunk);
  } catch (err) {
    if (!adapter.format || !isAdapterError(err, "Rejected") || err.reason !== "bad-format") throw err;
    await adapter.sink.edit(to, messageId, adapter.format.plain(chunk), { plain: true });
  }
}
