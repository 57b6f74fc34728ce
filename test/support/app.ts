import { loadConfig, type Config } from "../../src/config.js";
import { createApp, type App, type AppOptions } from "../../src/gateway/app.js";
import { silentLogger } from "../../src/log.js";
import type { Adapter } from "../../adapters/types.js";
import { freshDatabaseUrl, type TestProvider } from "./db.js";

/** The real app (every layer, real database, real HTTP server on a free port) with the given adapters. */
export async function startApp(
  provider: TestProvider,
  adapters: Adapter[],
  env: Record<string, string> = {},
  opts: Omit<AppOptions, "adapters"> = {},
): Promise<{ app: App; url: string; config: Config }> {
  const config = loadConfig({ DATABASE_URL: await freshDatabaseUrl(provider), HTTP_PORT: "0", LOG_LEVEL: "silent", DM_POLICY: "open", ...env });
  const app = await createApp(config, { log: silentLogger, adapters: () => adapters, ...opts });
  const url = await app.start();
  return { app, url, config };
}

export async function eventually<T>(fn: () => T | Promise<T>, pred: (v: T) => boolean, timeoutMs = 10_000, what = "condition"): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (pred(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(v)?.slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 15));
  }
}
