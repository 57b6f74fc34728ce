import { MediaError } from "./errors.js";
import type { FileLocation } from "./types.js";

export interface DownloadOptions {
  maxBytes: number;
  /** From the request to the last byte: a stalled server is given up on. */
  timeoutMs: number;
  signal?: AbortSignal;
  fetch?: typeof fetch;
}

const MAX_REDIRECTS = 3;

function allowed(url: URL, hosts: readonly string[]): boolean {
  return (url.protocol === "https:" || url.protocol === "http:") && hosts.includes(url.host.toLowerCase());
}

/**
 * GETs a platform file with a size cap, a timeout and no surprises: only
 * from the platform's own hosts (a redirect elsewhere is refused, so a
 * bearer token never leaves them), at most `maxBytes` (checked on the
 * declared size, Content-Length and the bytes as they stream), and never
 * longer than `timeoutMs`. Errors name the file's label, never its URL.
 */
export async function downloadFile(loc: FileLocation, opts: DownloadOptions): Promise<Buffer> {
  if (opts.signal?.aborted) throw opts.signal.reason ?? new MediaError("Aborted", `the download of ${loc.label} was interrupted`);
  if (loc.size !== undefined && loc.size > opts.maxBytes)
    throw new MediaError("TooLarge", `${loc.label} is ${loc.size} bytes, over the ${opts.maxBytes}-byte limit`, { size: loc.size });
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(new MediaError("Timeout", `${loc.label} did not download within ${opts.timeoutMs} ms`)), opts.timeoutMs);
  timer.unref?.();
  const onAbort = () => timeout.abort(opts.signal?.reason);
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  if (opts.signal?.aborted) onAbort();
  const fail = (err: unknown): never => {
    if (err instanceof MediaError) throw err;
    if (timeout.signal.aborted) {
      const reason: unknown = timeout.signal.reason;
      if (reason instanceof MediaError) throw reason;
      throw new MediaError("Aborted", `the download of ${loc.label} was interrupted`);
    }
    // A fetch failure's message is generic ("fetch failed"); its cause names the address, never the path.
    const code = (err as { cause?: { code?: unknown } })?.cause?.code;
    throw new MediaError("Failed", `${loc.label} could not be downloaded (${typeof code === "string" ? code : "network error"})`);
  };
  try {
    let url: URL;
    try {
      url = new URL(loc.url);
    } catch {
      throw new MediaError("Refused", `${loc.label} has no valid URL`);
    }
    const hosts = loc.allowedHosts.map((h) => h.toLowerCase());
    let response: Response | undefined;
    for (let hop = 0; ; hop++) {
      if (!allowed(url, hosts)) throw new MediaError("Refused", `${loc.label} points at a host that is not the platform's file endpoint (${url.host})`);
      response = await (opts.fetch ?? fetch)(url, { headers: loc.headers, redirect: "manual", signal: timeout.signal }).catch(fail);
      if (response.status < 300 || response.status >= 400 || response.status === 304) break;
      await response.body?.cancel().catch(() => undefined);
      const next = response.headers.get("location");
      if (!next || hop >= MAX_REDIRECTS) throw new MediaError("Failed", `${loc.label} redirected ${next ? "too many times" : "without a location"}`);
      url = new URL(next, url);
    }
    if (response.status === 404 || response.status === 410) throw new MediaError("NotFound", `${loc.label} is not there any more (HTTP ${response.status})`);
    if (!response.ok) throw new MediaError("Failed", `${loc.label} could not be downloaded (HTTP ${response.status})`);
    const declared = Number(response.headers.get("content-length") ?? NaN);
    if (Number.isFinite(declared) && declared > opts.maxBytes) {
      await response.body?.cancel().catch(() => undefined);
      throw new MediaError("TooLarge", `${loc.label} is ${declared} bytes, over the ${opts.maxBytes}-byte limit`, { size: declared });
    }
    const chunks: Buffer[] = [];
    let total = 0;
    if (response.body) {
      const reader = response.body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read().catch(fail);
          if (done) break;
          total += value.byteLength;
          if (total > opts.maxBytes) throw new MediaError("TooLarge", `${loc.label} is over the ${opts.maxBytes}-byte limit`, { size: total });
          chunks.push(Buffer.from(value));
        }
      } finally {
        await reader.cancel().catch(() => undefined);
      }
    }
    return Buffer.concat(chunks, total);
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", onAbort);
  }
}
