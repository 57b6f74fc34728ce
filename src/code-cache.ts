import type { Logger } from "./log.js";

/**
 * How the compiled build was loaded (bin/load-build.mjs): whether V8's code cache was used,
 * and which. serve reports it on the ready line, so a cache that stopped working (a Node
 * upgrade, a build without one) shows as a slower start with its reason, not silently.
 */
export interface CodeCache {
  status: "used" | "rejected" | "missing";
  /** The cache read: "build" (made by `npm run build`) or "serve" (written by a serve once ready). */
  from?: "build" | "serve";
  /** For a serve's cache: the adapters of the serve that wrote it, e.g. "discord+slack+telegram". */
  key?: string;
  /** Writes a cache from what this process compiled so far; returns its path. */
  save(kind: "serve", key: string): string;
}

/**
 * Once ready: writes the serve cache unless this start used one written for the same adapters,
 * so the next start also skips compiling what compiled lazily while connecting. A folder the
 * gateway may not write (a read-only image) keeps the build's cache: logged, never fatal.
 */
export function saveCodeCacheAfterReady(cache: CodeCache | undefined, platforms: string[], log: Logger): void {
  if (!cache) return;
  const key = [...new Set(platforms)].sort().join("+") || "none";
  if (cache.status === "used" && cache.from === "serve" && cache.key === key) return;
  try {
    const file = cache.save("serve", key);
    log.info({ file, was: cache.status, from: cache.from ?? null }, "code cache written for the next start");
  } catch (e) {
    log.info({ err: (e as Error).message }, "code cache not written (is the build's folder read-only?): starts use the build's cache");
  }
}
