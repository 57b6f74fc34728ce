import { SwitchboardError } from "../../errors.js";

export type MediaErrorCode = "TooLarge" | "WrongType" | "NotFound" | "Refused" | "Timeout" | "Failed" | "Aborted" | "Unsupported";

/** A file that could not be used, with a stable code; the message names the file's label, never its URL or a token. */
export class MediaError extends SwitchboardError<MediaErrorCode> {
  override readonly name = "MediaError";
  readonly size: number | undefined;
  constructor(code: MediaErrorCode, message: string, options: { size?: number; cause?: unknown } = {}) {
    super(code, message, options.cause === undefined ? undefined : { cause: options.cause });
    this.size = options.size;
  }
}
