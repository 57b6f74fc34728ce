import { SwitchboardError } from "../../errors.js";
import type { ReplyAddress, Severity } from "../../runtime/events.js";
import type { Adapter } from "../adapter.js";
import type { SentMessage } from "../contract.js";
import { isAdapterError } from "../contract.js";
import { chunkText } from "./chunker.js";

/** Neither the render nor the literal text could be made for the platform: the same on every attempt, so never retried. */
export class RenderFailed extends SwitchboardError<"RenderFailed"> {
  override readonly name = "RenderFailed";
}

/**
 * A reply's chunks as the platform gets them: rendered by the adapter's
 * format, then split at its limit. This is the one place every platform's
 * render is called from (replies, notices, drafts): a render that throws
 * (`onFallback` is told, to log and count it) gives the text as written,
 * escaped for the platform, so the reply still goes out. Only when that
 * fails too is it RenderFailed.
 */
export function chunksOf(adapter: Adapter, markdown: string, severity?: Severity, onFallback?: (err: unknown) => void): string[] {
  const format = adapter.format;
  if (!format) return chunkText(markdown, adapter.limits.maxTextLength);
  try {
    return format.chunks(markdown, severity);
  } catch (err) {
    onFallback?.(err);
    try {
      return format.literal(markdown, severity);
    } catch (again) {
      throw new RenderFailed(
        "RenderFailed",
        `the reply could not be formatted for ${adapter.platform}, neither rendered (${String((err as Error)?.message ?? err)}) nor as plain text (${String((again as Error)?.message ?? again)}); it is not retried`,
        { cause: again },
      );
    }
  }
}

/**
 * Sends one rendered chunk. A refusal of the text itself never loses it: a
 * chunk refused as too long is split smaller and each piece sent (a few
 * rounds at most), one refused for its formatting is sent as plain text.
 * Only the first piece quotes the user's message. Returns the first piece's
 * message.
 */
export interface ChunkOptions {
  onRefused?: (why: "too-long" | "bad-format") => void;
  /** A notice's severity, passed on to the sink (the console styles it). */
  severity?: Severity;
  /** Rounds of splitting so far, and whether the pieces are plain text (internal). */
  depth?: number;
  plain?: boolean;
}

export async function sendChunk(adapter: Adapter, to: ReplyAddress, chunk: string, key: string, opts: ChunkOptions = {}): Promise<SentMessage> {
  const { onRefused, severity, depth = 0 } = opts;
  let plain = opts.plain ?? false;
  const extra = { ...(severity && { severity }) };
  try {
    return await adapter.sink.send(to, chunk, { idempotencyKey: key, ...(plain && { plain }), ...extra });
  } catch (err) {
    const format = adapter.format;
    if (!format || !isAdapterError(err, "Rejected") || err.reason === undefined) throw err;
    onRefused?.(err.reason);
    if (err.reason === "bad-format" && !plain) return adapter.sink.send(to, format.plain(chunk), { idempotencyKey: `${key}p`, plain: true, ...extra });
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
      const sent = await sendChunk(adapter, j === 0 ? to : { ...to, replyToMessageId: undefined }, piece, `${key}.${j}`, { ...opts, depth: depth + 1, plain });
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
