/**
 * Where an attachment's bytes are, as the adapter that received it says: the
 * platform's own file endpoint. The core downloads it (download.ts), so the
 * size cap, the timeout, the redirect rule and the content check are one
 * piece of code for every platform.
 */
export interface FileLocation {
  /** The URL to GET. It may carry a secret (Telegram puts the bot token in the path): never log it. */
  url: string;
  /** Request headers (Slack's `Authorization: Bearer`), sent only to `allowedHosts`. */
  headers?: Record<string, string>;
  /** The hosts (URL.host, lower case) the download, and every redirect it follows, may reach. */
  allowedHosts: readonly string[];
  /** What to call the file in logs and errors: no token, no signed query. */
  label: string;
  /** The size the platform reports, when it does: an oversized file is refused before any byte is read. */
  size?: number;
}

/** What an attachment needs to be found again: the envelope's attachment, as stored with the event. */
export interface FileRef {
  kind: string;
  fileId: string;
  url?: string;
  name?: string;
  mimeType?: string;
  size?: number;
}

/** An adapter's file endpoint (Adapter.files). */
export interface FileSource {
  /** Where the bytes of `file` are (Telegram asks getFile first). Rejects when the platform does not know the file. */
  locate(file: FileRef, signal: AbortSignal, from?: FileOrigin): Promise<FileLocation>;
}

/**
 * Where the file was shared: the reply address of its message (an adapter
 * serving several bots picks the credentials of the one that received it:
 * Slack's workspace token).
 */
export interface FileOrigin {
  botId: string;
  extra?: Record<string, string>;
}
