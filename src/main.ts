import type { Config } from "./config.js";
import { SECRET_KEYS } from "./config.js";
import { type CodeCache, saveCodeCacheAfterReady } from "./code-cache.js";
import { createApp, type AppOptions } from "./gateway/app.js";
import { configuredAgents } from "./gateway/wiring/agent.js";
import { createLogger, describeDatabase, registerSecret } from "./log.js";
import { ServeLock } from "./store/lock.js";

/**
 * Runs the gateway until SIGINT/SIGTERM, then stops gracefully within
 * SHUTDOWN_GRACE (see App.stop): migrations, the HTTP server (web
 * console, /healthz, /metrics, webhooks) and every configured adapter. The
 * composition root (bin/switchboard.mjs) passes the adapters in, so src/
 * never imports an adapter or a platform SDK.
 */
export async function serve(config: Config, opts: Pick<AppOptions, "adapters"> & { codeCache?: CodeCache } = {}): Promise<void> {
  for (const k of SECRET_KEYS) registerSecret(config[k] as string | undefined);
  const log = createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  const started = performance.now();
  // Before anything opens: an invalid AGENTS_CONFIG stops here with one line naming the agent and the field.
  const agentsConfig = configuredAgents(config);
  // Before anything connects: a second serve on this SQLite file stops here, naming the first.
  const lock = ServeLock.acquire(config.DATABASE_URL);
  const app = await createApp(config, { log, adapters: opts.adapters, agentsConfig });
  let url: string;
  try {
    url = await app.start();
  } catch (e) {
    lock?.release();
    throw listenError(e, config);
  }
  const adapters = app.gateway.adapters.map((a) => `${a.platform}:${a.botId}`);
  const agent = config.OPENAI_BASE_URL || config.OPENAI_API_KEY ? "openai" : "echo";
  const model = agent === "openai" ? (config.OPENAI_MODEL ?? null) : null;
  const modelUrl = agent === "openai" ? (config.OPENAI_BASE_URL ?? "https://api.openai.com/v1") : null;
  const database = describeDatabase(config.DATABASE_URL);
  // codeCache: whether the compiled build started from V8's code cache (null from the sources).
  const codeCache = opts.codeCache ? { codeCache: opts.codeCache.status, codeCacheFrom: opts.codeCache.from ?? null } : { codeCache: null };
  const agents = agentsConfig.agents.size > 1 ? { agents: [...agentsConfig.agents.keys()], routes: agentsConfig.routes.length } : {};
  log.info(
    { url, adapters, agent, model, modelUrl, ...agents, provider: app.db.provider, database, readyMs: Math.round(performance.now() - started), ...codeCache },
    `switchboard ready on ${url} (adapters ${adapters.join(", ") || "none"}; agent ${agent}${model ? `, model ${model}` : ""}; database ${database})`,
  );
  saveCodeCacheAfterReady(
    opts.codeCache,
    app.gateway.adapters.map((a) => a.platform),
    log,
  );
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
  const graceMs = config.SHUTDOWN_GRACE;
  // A second signal, or a stop that outlasts the grace (a hung adapter), ends the process at once;
  // what did not finish is in the database and is replayed at the next start.
  const now = (why: string, code: number) => {
    log.warn({ graceMs }, `${why}: exiting now; unfinished work is replayed at the next start`);
    log.flush();
    process.exit(code);
  };
  process.once("SIGINT", () => now("second signal", 130));
  process.once("SIGTERM", () => now("second signal", 143));
  setTimeout(() => now("the stop took longer than SHUTDOWN_GRACE", 1), graceMs + 4000).unref();
  log.info({ signal, graceMs }, "stopping: intake closed; running turns and queued replies may finish within SHUTDOWN_GRACE");
  await app.stop({ graceMs });
  lock?.release();
  log.info("switchboard stopped");
  log.flush();
  // Nothing should keep the process alive now; if a stray socket or timer does, do not linger.
  setTimeout(() => process.exit(process.exitCode ?? 0), 1000).unref();
}

/** A port another process holds, named by its variable and the fix; any other start failure as it is. */
function listenError(e: unknown, config: Config): unknown {
  const err = e as NodeJS.ErrnoException & { port?: number };
  if (err?.code !== "EADDRINUSE") return e;
  const variable = config.OPERATOR_PORT !== undefined && err.port === Number(config.OPERATOR_PORT) ? "OPERATOR_PORT" : "HTTP_PORT";
  const port = err.port ?? (variable === "HTTP_PORT" ? config.HTTP_PORT : config.OPERATOR_PORT);
  return new Error(`${variable} ${port} is in use (by another switchboard?); set ${variable} to a free port, or stop what listens there.`, { cause: e });
}
