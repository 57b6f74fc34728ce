import type { Config } from "./config.js";
import { SECRET_KEYS } from "./config.js";
import { createApp, type AppOptions } from "./gateway/app.js";
import { createLogger, describeDatabase, registerSecret } from "./log.js";

/**
 * Runs the gateway until SIGINT/SIGTERM: migrations, the HTTP server (web
 * console, /healthz, /metrics, webhooks) and every configured adapter. The
 * composition root (bin/switchboard.mjs) passes the adapters in, so src/
 * never imports an adapter or a platform SDK.
 */
export async function serve(config: Config, opts: Pick<AppOptions, "adapters"> = {}): Promise<void> {
  for (const k of SECRET_KEYS) registerSecret(config[k] as string | undefined);
  const log = createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  const started = performance.now();
  const app = await createApp(config, { log, adapters: opts.adapters });
  const url = await app.start();
  const adapters = app.gateway.adapters.map((a) => `${a.platform}:${a.botId}`);
  const agent = config.OPENAI_BASE_URL || config.OPENAI_API_KEY ? "openai" : "echo";
  const model = agent === "openai" ? (config.OPENAI_MODEL ?? null) : null;
  const modelUrl = agent === "openai" ? (config.OPENAI_BASE_URL ?? "https://api.openai.com/v1") : null;
  const database = describeDatabase(config.DATABASE_URL);
  log.info(
    { url, adapters, agent, model, modelUrl, provider: app.db.provider, database, readyMs: Math.round(performance.now() - started) },
    `switchboard ready on ${url} (adapters ${adapters.join(", ") || "none"}; agent ${agent}${model ? `, model ${model}` : ""}; database ${database})`,
  );
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  log.info("stopping: draining in-flight replies");
  await app.stop();
  log.info("switchboard stopped");
  log.flush();
}
