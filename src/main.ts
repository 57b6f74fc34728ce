import type { Config } from "./config.js";
import { createLogger, registerSecret } from "./log.js";
import { SECRET_KEYS } from "./config.js";
import { openDatabase } from "./store/index.js";

/**
 * Runs the gateway until SIGINT/SIGTERM. Issue by issue this grows the HTTP
 * server, the web console and the platform adapters; it always starts on
 * embedded SQLite with no tokens.
 */
export async function serve(config: Config): Promise<void> {
  for (const k of SECRET_KEYS) registerSecret(config[k] as string | undefined);
  const log = createLogger({ level: config.LOG_LEVEL });
  const started = performance.now();
  const db = await openDatabase({ url: config.DATABASE_URL });
  log.info({ provider: db.provider, readyMs: Math.round(performance.now() - started) }, "switchboard ready");
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  await db.close();
  log.info("switchboard stopped");
  log.flush();
}
