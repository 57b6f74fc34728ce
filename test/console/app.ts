import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ConsoleAdapter, type ConsoleAdapterOptions } from "../../adapters/console/index.js";
import { createApp, type App } from "../../src/gateway/app.js";
import { loadConfig } from "../../src/config.js";

export interface ConsoleApp {
  app: App;
  adapter: ConsoleAdapter;
  base: string;
  dir: string;
  /** Stops the app; the database folder is removed unless `keepDatabase` (for a restart on the same database). */
  stop(opts?: { keepDatabase?: boolean }): Promise<void>;
}

/**
 * The real gateway, in-process, on a fresh SQLite file (or the one in `dir`,
 * to restart on the same database) and a free port, with only the console adapter.
 */
export async function startConsoleApp(env: Record<string, string> = {}, opts: ConsoleAdapterOptions = {}, where: { dir?: string } = {}): Promise<ConsoleApp> {
  const dir = where.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-console-"));
  const adapter = new ConsoleAdapter(opts);
  const app = await createApp(loadConfig({ DATABASE_URL: `file:${path.join(dir, "x.db")}`, HTTP_PORT: "0", LOG_LEVEL: "silent", ...env }), {
    adapters: () => [adapter],
  });
  let base: string;
  try {
    base = await app.start();
  } catch (e) {
    await app.stop().catch(() => undefined);
    throw e;
  }
  return {
    app,
    adapter,
    base,
    dir,
    async stop(o = {}) {
      await app.stop();
      if (!o.keepDatabase) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls `fn` until it returns a value other than undefined, or fails with `what`. */
export async function eventually<T>(fn: () => Promise<T | undefined>, what: string, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ""}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
