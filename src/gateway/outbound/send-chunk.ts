import { SwitchboardError } from "../../errors.js";
import type { Severity } from "../../runtime/events.js";
import type { Adapter } from "../adapter.js";
import { chunkText } from "../format/chunk-text.js";

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
