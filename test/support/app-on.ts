// Imports no vitest: the bench (bench/scenarios) starts its apps through this module too.
import { loadConfig, type Config } from "../../src/config.js";
import { createApp, type App, type AppOptions } from "../../src/gateway/app.js";
import { silentLogger } from "../../src/log.js";
import type { Adapter } from "../../adapters/types.js";

/**
 * The real app (every layer, the database at `databaseUrl`, the HTTP server
 * on a free port, open DMs, no logs) with the given adapters, started.
 */
export async function startAppOn(
  databaseUrl: string,
  adapters: Adapter[],
  env: Record<string, string> = {},
  opts: Omit<AppOptions, "adapters"> = {},
): Promise<{ app: App; url: string; config: Config }> {
  const config = loadConfig({ DATABASE_URL: databaseUrl, HTTP_PORT: "0", LOG_LEVEL: "silent", DM_POLICY: "open", ...env });
  const app = await createApp(config, { log: silentLogger, adapters: () => adapters, ...opts });
  const url = await app.start();
  return { app, url, config };
}
