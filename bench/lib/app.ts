import { loadConfig } from "../../src/config.js";
import { createApp, type App, type AppOptions } from "../../src/gateway/app.js";
import { silentLogger } from "../../src/log.js";
import type { Adapter } from "../../adapters/types.js";

export const BENCH_ENV = { DM_POLICY: "open", GROUP_REQUIRE_MENTION: "false", LOG_LEVEL: "silent", HTTP_PORT: "0", HTTP_HOST: "127.0.0.1" } as const;

/** The real app (every layer, real database, HTTP on 127.0.0.1:0) with the given adapters. */
export async function startBenchApp(
  url: string,
  adapters: Adapter[],
  opts: Omit<AppOptions, "adapters" | "log"> = {},
  env: Record<string, string> = {},
): Promise<{ app: App; url: string }> {
  const config = loadConfig({ ...BENCH_ENV, DATABASE_URL: url, ...env });
  const app = await createApp(config, { log: silentLogger, adapters: () => adapters, ...opts });
  const base = await app.start();
  return { app, url: base };
}
