import { randomUUID } from "node:crypto";
import type { Config } from "../config.js";
import { createLogger, errInfo, type Logger } from "../log.js";
import { createAgentFactory, type AgentFactory } from "../agent/factory.js";
import { personas as loadPersonas } from "../agent/personas.js";
import { builtinTools } from "../agent/tools.js";
import { commandInterceptor, type CommandSpec } from "../runtime/commands/index.js";
import { agentCondenser, extractiveCondenser, Reflector } from "../runtime/reflection.js";
import { Runner } from "../runtime/runner.js";
import { Registry } from "../session/registry.js";
import {
  AccessStore, DeliveryStore, IdentityStore, InboundStore, KvStore, LeaseStore, MemoryStore, SessionStore, TranscriptStore, TurnStore,
  openDatabase, type Database, type StoreFaults,
} from "../store/index.js";
import type { Adapter } from "./adapter.js";
import { Gateway } from "./gateway.js";
import { HttpServer, json } from "./http.js";
import type { HttpResponse } from "./adapter.js";
import { mountConsoleApi } from "./console-api.js";
import { GatewayLedger } from "./ledger.js";
import { GatewayMetrics } from "./metrics.js";
import { Outbound } from "./outbound.js";
import { Pairing } from "./pairing.js";
import { SentLog } from "./sent-log.js";
import { sqliteFile } from "../store/db.js";

export interface AppOptions {
  log?: Logger;
  /** Builds the platform adapters once the app exists (the composition root passes adapters/). */
  adapters?: (config: Config) => Adapter[];
  agentFactory?: AgentFactory | ((metadata: Record<string, unknown>, ctx: { session: import("../session/info.js").Info }) => import("../agent/types.js").Agent);
  faults?: StoreFaults;
  /** Sees every SQL statement (benchmarks). */
  onQuery?: import("../store/db.js").DatabaseOptions["onQuery"];
  /** Stream a draft only when a turn runs longer than this. */
  streamAfterMs?: number;
  /** How often unsent replies are retried. */
  retryIntervalMs?: number;
}

export interface App {
  config: Config;
  log: Logger;
  db: Database;
  registry: Registry;
  runner: Runner;
  gateway: Gateway;
  http: HttpServer;
  metrics: GatewayMetrics;
  reflector: Reflector;
  /** Listens on HTTP_HOST:HTTP_PORT and starts the adapters. Returns the base URL. */
  start(): Promise<string>;
  /**
   * Stops. With `graceMs` (SIGTERM/SIGINT: SHUTDOWN_GRACE) it is a graceful
   * stop: intake closes at once (webhooks and the console answer 503,
   * polling and Socket Mode stop), running turns and queued replies get up
   * to graceMs to finish, and whatever has not finished stays in the
   * database: unhandled events are replayed and unsent replies sent at the
   * next start. Without it, running turns are abandoned at once (likewise
   * replayed) and queued replies are waited for.
   */
  stop(opts?: { graceMs?: number }): Promise<void>;
}

/** The composition of every layer, as `npm start` runs it. */
export async function createApp(config: Config, opts: AppOptions = {}): Promise<App> {
  const log = opts.log ?? createLogger({ level: config.LOG_LEVEL });
  const db = await openDatabase({
    url: config.DATABASE_URL, faults: opts.faults, onQuery: opts.onQuery,
    onIdleError: (err) => log.warn({ err: errInfo(err) }, "an idle PostgreSQL connection dropped; the next query reconnects"),
  });
  const registry = new Registry(new SessionStore(db));
  const transcript = new TranscriptStore(db);
  const memories = new MemoryStore(db);
  const kv = new KvStore(db);
  const identities = new IdentityStore(db);
  const metrics = new GatewayMetrics({ processMetrics: true });
  const personaRegistry = loadPersonas(config.PERSONAS ? (JSON.parse(config.PERSONAS) as Record<string, string>) : {});
  const agentFactory =
    opts.agentFactory ??
    createAgentFactory({
      baseUrl: config.OPENAI_BASE_URL,
      apiKey: config.OPENAI_API_KEY,
      model: config.OPENAI_MODEL,
      temperature: config.MODEL_TEMPERATURE !== undefined ? Number(config.MODEL_TEMPERATURE) : undefined,
      maxOutputTokens: config.MODEL_MAX_OUTPUT_TOKENS !== undefined ? Number(config.MODEL_MAX_OUTPUT_TOKENS) : undefined,
      thinkingLevel: config.MODEL_THINKING_LEVEL as never,
      maxToolRounds: config.TOOL_MAX_ROUNDS,
      log,
    });
  const deliveries = new DeliveryStore(db);
  const ledger = new GatewayLedger(new TurnStore(db, deliveries), config.INBOUND_TTL);
  const reflector = new Reflector({
    registry, transcript, memories, kv, log,
    everyTurns: config.REFLECT_EVERY_TURNS,
    condenser: "provider" in agentFactory && agentFactory.provider === "openai" ? agentCondenser(() => agentFactory({})) : extractiveCondenser(),
  });
  // The built-in tools, scoped per turn: search_sessions only sees the asking conversation's own sessions.
  const withTools = (metadata: Record<string, unknown>, ctx: { session: import("../session/info.js").Info }) => {
    if (!("provider" in agentFactory) || agentFactory.provider !== "openai") return agentFactory(metadata, ctx as never);
    const owner = { userId: ctx.session.userId, agentId: ctx.session.agentId };
    const tools = builtinTools({
      searchSessions: async (query) => {
        const mine = await registry.list(owner, { kinds: ["chat", "main"], includeArchived: true, limit: 100 });
        const hits = await transcript.search(mine.map((s) => s.id), query.split(/\s+/).filter(Boolean).slice(0, 8), 10);
        return hits.length ? hits.map((h) => `${h.sessionId}: ${h.snippet}`).join("\n") : "No earlier session mentions that.";
      },
    });
    return agentFactory(metadata, { tools });
  };
  const runner = new Runner({
    registry, transcript, memories, ledger, log,
    agentFactory: withTools,
    personas: personaRegistry,
    busyPolicy: config.BUSY_POLICY,
    context: { maxMessages: config.CONTEXT_MAX_MESSAGES, maxChars: config.CONTEXT_MAX_CHARS },
    turnTimeoutMs: config.AGENT_TIMEOUT,
    maxLiveSessions: config.LIVE_SESSIONS_MAX,
    freshWindow: config.SHARED_DATABASE,
    onTurnCommitted: reflector.onTurnCommitted,
  });
  const pairing = new Pairing(new AccessStore(db));
  const approve: CommandSpec = {
    name: "approve",
    summary: "approve a DM pairing code (operators)",
    usage: "/approve <code>",
    access: "admin",
    async run(ctx) {
      const r = await pairing.approve(ctx.args);
      ctx.notify(typeof r === "string" ? "error" : "success", typeof r === "string" ? `Code ${ctx.args || "(none)"} is ${r === "missing" ? "unknown" : r}.` : `Approved ${r.senderId} on ${r.platform}.`);
    },
  };
  const commands = commandInterceptor({ transcript, personas: personaRegistry, defaultModel: config.OPENAI_MODEL, extra: [approve], adminCommands: config.ADMIN_COMMANDS });
  runner.register(commands);

  const http = new HttpServer(log);
  let intakeOpen = true;
  const shuttingDown = async (): Promise<HttpResponse> => {
    const r = json(503, { error: "switchboard is shutting down; send this again in a few seconds" });
    return { ...r, headers: { ...r.headers, "retry-after": "5" } };
  };
  const processId = randomUUID();
  // The sent log lives beside a SQLite file (one host, one process). PostgreSQL marks replies sent
  // over a pool without SQLite's single-writer queue, so the window it closes is far smaller there.
  const sentLog = db.provider === "sqlite" && !config.DATABASE_URL.includes(":memory:") ? SentLog.open(`${sqliteFile(config.DATABASE_URL)}.sent.log`) : undefined;
  const outbound = new Outbound({
    deliveries, metrics, log, streamAfterMs: opts.streamAfterMs, owner: processId, sentLog,
    ...(config.SHARED_DATABASE ? { staleAfterMs: 30_000 } : {}),
  });
  runner.withSink([], outbound.sink);
  const gateway = new Gateway({
    policy: config, registry, identities, inbound: new InboundStore(db), kv, runner, ledger, outbound, pairing, metrics, log,
    // Adapters' routes (webhooks, Slack events, the console's messages) refuse new work once a stop begins.
    route: (m, p, h) => http.route(m, p, m === "POST" ? (req) => (intakeOpen ? h(req) : shuttingDown()) : h),
    leases: new LeaseStore(db),
    processId,
    commands: commands.commands.filter((c) => (c.access ?? "anyone") === "anyone" && !config.ADMIN_COMMANDS.includes(c.name)).map((c) => ({ name: c.name, description: c.summary })),
  });
  for (const a of opts.adapters?.(config) ?? []) gateway.add(a);

  const health = () => gateway.adapters.map((a) => ({ platform: a.platform, botId: a.botId, ...a.health() }));
  http.route("GET", "/healthz", async (req) => {
    const adapters = health();
    const ready = intakeOpen && adapters.every((a) => a.ready);
    return json(req.query.get("ready") && !ready ? 503 : 200, { status: intakeOpen ? "ok" : "stopping", ready, adapters });
  });
  http.route("GET", "/metrics", async () => {
    for (const a of health()) metrics.adapterUp.set({ platform: a.platform, bot: a.botId }, a.ready ? 1 : 0);
    outbound.updateGauges();
    return { status: 200, headers: { "content-type": metrics.contentType }, body: await metrics.text() };
  });

  if (config.CONSOLE_ENABLED) mountConsoleApi((m, p, h) => http.route(m, p, h), { registry, sessions: registry.store, transcript, runner });

  let timers: NodeJS.Timeout[] = [];
  return {
    config, log, db, registry, runner, gateway, http, metrics, reflector,
    async start() {
      const addr = await http.listen(config.HTTP_PORT, config.HTTP_HOST);
      outbound.startClaims();
      await gateway.start();
      reflector.start(config.REFLECT_SWEEP_INTERVAL);
      timers = [
        setInterval(() => void outbound.flushUnsent().catch((err) => log.warn({ err: String(err) }, "retrying unsent replies failed")), opts.retryIntervalMs ?? 15_000),
        setInterval(() => runner.evictIdle(30 * 60_000), 60_000),
      ];
      for (const t of timers) t.unref();
      return `http://${addr.address}:${addr.port}`;
    },
    async stop(opts = {}) {
      for (const t of timers) clearInterval(t);
      intakeOpen = false;
      if (opts.graceMs !== undefined) {
        const deadline = Date.now() + opts.graceMs;
        const left = () => Math.max(0, deadline - Date.now());
        await gateway.stopIntake();
        const { running } = await runner.drain(left());
        const unsent = await outbound.settle(left());
        const level = running || unsent ? "warn" : "info";
        log[level]({ runningTurns: running, unsentReplies: unsent, graceMs: opts.graceMs }, running || unsent ? "shutdown grace over: what did not finish is replayed at the next start" : "running turns and queued replies finished");
        await gateway.stop(left());
      } else await gateway.stop();
      await reflector.stop();
      await runner.close();
      outbound.close();
      await http.close();
      await db.close();
    },
  };
}
