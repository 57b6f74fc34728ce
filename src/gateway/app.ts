import { randomUUID } from "node:crypto";
import type { Config } from "../config.js";
import { createLogger, errInfo, type Logger } from "../log.js";
import { createAgentFactory, type AgentFactory } from "../agent/factory.js";
import { personas as loadPersonas } from "../agent/personas.js";
import { builtinTools } from "../agent/tools.js";
import { Tooling } from "./tooling.js";
import type { McpConfig } from "../agent/mcp/index.js";
import { commandInterceptor, type CommandSpec } from "../runtime/commands/index.js";
import { agentCondenser, extractiveCondenser, Reflector } from "../runtime/reflection.js";
import { Runner } from "../runtime/runner.js";
import { Registry } from "../session/registry.js";
import {
  AccessStore,
  ApprovalStore,
  DeliveryStore,
  IdentityStore,
  InboundStore,
  KvStore,
  LeaseStore,
  MemoryStore,
  SessionStore,
  TranscriptStore,
  TurnStore,
  openDatabase,
  type Database,
  type StoreFaults,
} from "../store/index.js";
import type { Adapter } from "./adapter.js";
import { Gateway } from "./inbound/gateway.js";
import { HttpServer, json } from "./http/server.js";
import { loginRoutes } from "./http/login.js";
import { OperatorAuth } from "./http/operator-auth.js";
import { Retention } from "./retention.js";
import type { HttpResponse } from "./adapter.js";
import { mountConsoleApi } from "./http/console-api.js";
import { GatewayLedger } from "./ledger.js";
import { GatewayMetrics } from "./metrics.js";
import { Outbound } from "./outbound/outbound.js";
import { Pairing } from "./inbound/pairing.js";
import { SentLog } from "./outbound/sent-log.js";
import { sqliteFile } from "../store/db.js";
import { proactiveParts } from "./http/api/wire.js";
import type { ApiServer } from "./http/api/server.js";
import { scheduleApi } from "./jobs/api.js";
import { jobCommands, scheduleMessageTool } from "./jobs/commands.js";
import type { JobRunner } from "./jobs/runner.js";
import type { JobService } from "./jobs/service.js";
import { jobRunner, jobService } from "./jobs/wire.js";
import { mediaInput } from "./media.js";
import type { FileSource } from "../runtime/media/types.js";
import { turnLimit } from "../runtime/turn-limit.js";

/** The driver's error code behind a store failure (SQLITE_FULL, ECONNRESET, ...), for the failure counter's label. */
function storeErrorCode(err: unknown): string {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | undefined;
  const inner = e?.cause?.code;
  return typeof inner === "string" ? inner : typeof e?.code === "string" ? e.code : "unknown";
}

export interface AppOptions {
  log?: Logger;
  /** Builds the platform adapters once the app exists (the composition root passes adapters/). */
  adapters?: (config: Config) => Adapter[];
  agentFactory?:
    | AgentFactory
    | ((
        metadata: Record<string, unknown>,
        ctx: import("../runtime/runner.js").AgentContext & import("../agent/factory.js").TurnOverrides,
      ) => import("../agent/types.js").Agent);
  /** MCP servers and policies given directly instead of MCP_CONFIG's file (tests). */
  mcpConfig?: McpConfig;
  faults?: StoreFaults;
  /** Sees every SQL statement (benchmarks). */
  onQuery?: import("../store/db.js").DatabaseOptions["onQuery"];
  /** Stream a draft only when a turn runs longer than this. */
  streamAfterMs?: number;
  /** How often unsent replies are retried. */
  retryIntervalMs?: number;
  /** How often a probe write checks the store for /healthz (default 5 s). */
  storeProbeMs?: number;
  /** The clock that stamps recording times (tests skew it: recorded order comes from the database, never from it). */
  clock?: () => Date;
  /** The clock scheduled jobs run by (tests drive it across daylight-saving changes). */
  jobClock?: () => Date;
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
  retention: Retention;
  reflector: Reflector;
  /** The HTTP API v1: mount a module's OpenAPIHono routes with `api.mount(prefix, app, scope)`. */
  api: ApiServer;
  /** The tools, MCP servers and approvals. */
  tooling: Tooling;
  /** Scheduled jobs: the service (create, list, cancel) and the runner. */
  jobs: { service: JobService; runner: JobRunner };
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
  const log = opts.log ?? createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  const metrics = new GatewayMetrics({ processMetrics: true });
  const db = await openDatabase({
    url: config.DATABASE_URL,
    faults: opts.faults,
    onQuery: opts.onQuery,
    onIdleError: (err) => log.warn({ err: errInfo(err) }, "an idle PostgreSQL connection dropped; the next query reconnects"),
    // Each store call that failed for good is counted; the caller logs it with its own context.
    onFailure: (op, err) => metrics.storeFailures.inc({ op, code: storeErrorCode(err) }),
    onFenced: (reason) => {
      metrics.internalErrors.inc({ where: "store-identity" });
      log.error({ reason }, "the database is not the one this gateway opened: intake stops (nothing more is acknowledged) and /healthz answers 503");
    },
  });
  const registry = new Registry(new SessionStore(db));
  const transcript = new TranscriptStore(db);
  const memories = new MemoryStore(db, { cache: !config.SHARED_DATABASE });
  const kv = new KvStore(db);
  const identities = new IdentityStore(db);
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
      toolTimeoutMs: config.TOOL_TIMEOUT,
      speakerNames: config.MODEL_SPEAKER_NAMES,
      modelsAllowed: config.MODELS_ALLOWED,
      log,
    });
  const deliveries = new DeliveryStore(db);
  const inbound = new InboundStore(db, opts.clock);
  const retention = new Retention({ retentionMs: config.RECORD_RETENTION, tables: { inbound, delivery: deliveries }, log, metrics });
  const ledger = new GatewayLedger(new TurnStore(db, deliveries), config.INBOUND_TTL);
  const reflector = new Reflector({
    registry,
    transcript,
    memories,
    kv,
    log,
    everyTurns: config.REFLECT_EVERY_TURNS,
    condenser:
      "provider" in agentFactory && agentFactory.provider === "openai" ? agentCondenser(() => (agentFactory as AgentFactory)({})) : extractiveCondenser(),
  });
  const processId = randomUUID();
  let gatewayRef: Gateway | undefined;
  const tooling = new Tooling({
    ...(config.MCP_CONFIG && { mcpConfigPath: config.MCP_CONFIG }),
    ...(opts.mcpConfig && { mcpConfig: opts.mcpConfig }),
    approvers: config.APPROVERS,
    approvalTimeoutMs: config.APPROVAL_TIMEOUT,
    toolTimeoutMs: config.TOOL_TIMEOUT,
    store: new ApprovalStore(db),
    kv,
    owner: processId,
    shared: config.SHARED_DATABASE,
    log,
    adapters: () => gatewayRef?.adapters ?? [],
    onDecision: (status) => metrics.approvals.inc({ outcome: status }),
  });
  const jobs = jobService(db, { registry, kv, identities, config, now: opts.jobClock });
  // The built-in tools, scoped per turn (search_sessions only sees the asking conversation's own sessions), the
  // scheduler's schedule_message for this conversation, the MCP servers' tools, and the approval handler that asks
  // the turn's chat.
  const sessionTools = (session: import("../session/info.js").Info) => {
    const owner = { userId: session.userId, agentId: session.agentId };
    const builtins = builtinTools({
      searchSessions: async (query) => {
        const mine = await registry.list(owner, { kinds: ["chat", "main"], includeArchived: true, limit: 100 });
        const hits = await transcript.search(
          mine.map((s) => s.id),
          query.split(/\s+/).filter(Boolean).slice(0, 8),
          10,
        );
        return hits.length ? hits.map((h) => `${h.sessionId}: ${h.snippet}`).join("\n") : "No earlier session mentions that.";
      },
    }).list();
    return [...builtins, scheduleMessageTool(jobs, session)];
  };
  const withTools = (metadata: Record<string, unknown>, ctx: import("../runtime/runner.js").AgentContext) => {
    const tools = tooling.registry(sessionTools(ctx.session));
    return agentFactory(metadata, { ...ctx, tools, approval: tooling.handler(ctx, tools) } as never);
  };
  const runner = new Runner({
    registry,
    transcript,
    memories,
    ledger,
    log,
    agentFactory: withTools,
    personas: personaRegistry,
    busyPolicy: config.BUSY_POLICY,
    context: { maxMessages: config.CONTEXT_MAX_MESSAGES, maxChars: config.CONTEXT_MAX_CHARS },
    turnTimeoutMs: config.AGENT_TIMEOUT,
    maxLiveSessions: config.LIVE_SESSIONS_MAX,
    freshWindow: config.SHARED_DATABASE,
    onTurnCommitted: reflector.onTurnCommitted,
    // A failing commit is retried until its event's TTL (durable-commit.ts); without a known event, not at all.
    commitDeadline: (ids) => {
      const t = ids.map((id) => ledger.occurredAt.get(id)).find((v) => v !== undefined);
      return t === undefined ? undefined : t + config.INBOUND_TTL;
    },
    onCommitError: () => metrics.internalErrors.inc({ where: "turn-commit" }),
    prepareInput: mediaInput(
      config,
      log,
      metrics,
      (platform, botId): FileSource | undefined => gateway.adapters.find((a: Adapter) => a.platform === platform && a.botId === botId)?.files,
    ),
  });
  const pairing = new Pairing(new AccessStore(db));
  const approve: CommandSpec = {
    name: "approve",
    summary: "approve a DM pairing code (operators)",
    usage: "/approve <code>",
    access: "admin",
    async run(ctx) {
      const r = await pairing.approve(ctx.args);
      ctx.notify(
        typeof r === "string" ? "error" : "success",
        typeof r === "string" ? `Code ${ctx.args || "(none)"} is ${r === "missing" ? "unknown" : r}.` : `Approved ${r.senderId} on ${r.platform}.`,
      );
    },
  };
  const builtinList = builtinTools().list();
  const commands = commandInterceptor({
    transcript,
    personas: personaRegistry,
    defaultModel: config.OPENAI_MODEL,
    extra: [approve, ...tooling.commands(() => builtinList), ...jobCommands(jobs)],
    adminCommands: config.ADMIN_COMMANDS,
    modelsAllowed: config.MODELS_ALLOWED,
  });
  // Approval ids and the cancelling commands go first; everything else on to the commands.
  runner.register(tooling.interceptor());
  runner.register(commands);
  if (config.USER_TURNS_PER_MINUTE > 0) runner.register(turnLimit({ perMinute: config.USER_TURNS_PER_MINUTE }));

  const http = new HttpServer({
    log,
    metrics,
    auth: new OperatorAuth({
      token: config.OPERATOR_TOKEN,
      publicUrl: config.PUBLIC_URL,
      bindHosts: [config.OPERATOR_PORT !== undefined ? (config.OPERATOR_HOST ?? "127.0.0.1") : config.HTTP_HOST],
    }),
    limits: {
      maxConnections: config.HTTP_MAX_CONNECTIONS,
      maxBufferedBytes: config.HTTP_MAX_BUFFERED_MB * 1024 * 1024,
      headersTimeoutMs: config.HTTP_HEADERS_TIMEOUT,
      requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT,
      defaultMaxBodyBytes: consoleBodyLimit(config.MAX_INBOUND_CHARS),
    },
  });
  let intakeOpen = true;
  const shuttingDown = async (): Promise<HttpResponse> => {
    const r = json(503, { error: "switchboard is shutting down; send this again in a few seconds" });
    return { ...r, headers: { ...r.headers, "retry-after": "5" } };
  };
  // The sent log lives beside a SQLite file (one host, one process). PostgreSQL marks replies sent
  // over a pool without SQLite's single-writer queue, so the window it closes is far smaller there.
  const sentLog =
    db.provider === "sqlite" && !config.DATABASE_URL.includes(":memory:") ? SentLog.open(`${sqliteFile(config.DATABASE_URL)}.sent.log`) : undefined;
  const outbound = new Outbound({
    deliveries,
    metrics,
    log,
    streamAfterMs: opts.streamAfterMs,
    owner: processId,
    sentLog,
    ...(config.SHARED_DATABASE ? { staleAfterMs: 30_000 } : {}),
  });
  runner.withSink([], outbound.sink);
  const proactive = proactiveParts({ config, db, registry, deliveries, outbound, log, metrics });
  const gateway: Gateway = new Gateway({
    conversations: proactive.directory,
    policy: config,
    registry,
    identities,
    inbound,
    kv,
    runner,
    ledger,
    outbound,
    pairing,
    metrics,
    log,
    // Adapters' routes (webhooks, Slack events, the console's messages) refuse new work once a stop begins.
    route: (m, p, h, o) => http.route(m, p, m === "POST" ? (req) => (intakeOpen ? h(req) : shuttingDown()) : h, o),
    leases: new LeaseStore(db),
    processId,
    commands: commands.commands
      .filter((c) => (c.access ?? "anyone") === "anyone" && !config.ADMIN_COMMANDS.includes(c.name))
      .map((c) => ({ name: c.name, description: c.summary })),
    commandNames: commands.commands.flatMap((c) => [c.name, ...(c.aliases ?? [])]),
    onApprovalClick: (c) => tooling.approvals.click(c),
  });
  gatewayRef = gateway;
  for (const a of opts.adapters?.(config) ?? []) gateway.add(a);
  const jobsRunner = jobRunner(jobs, {
    config,
    registry,
    runner,
    outbound,
    deliveries,
    ledger,
    adapters: () => gateway.adapters,
    agent: withTools,
    personas: personaRegistry,
    log,
    metrics: metrics.registry,
    onError: (where) => metrics.internalErrors.inc({ where }),
    owner: processId,
    now: opts.jobClock,
  });

  const health = () => gateway.adapters.map((a) => ({ platform: a.platform, botId: a.botId, ...a.health() }));
  // Public, so a load balancer can probe it; the details are for operators (token, or loopback).
  // The store's health comes from real outcomes (every call, and a probe write every few seconds): a
  // store that cannot write, or a SQLite file deleted or replaced, answers 503 with the reason.
  http.route(
    "GET",
    "/healthz",
    async (req) => {
      const adapters = health();
      const store = db.health();
      const down = adapters.filter((a) => !a.ready).map((a) => `${a.platform}${a.botId ? `:${a.botId}` : ""}${a.detail ? ` (${a.detail})` : ""}`);
      const ready = intakeOpen && down.length === 0 && store.ok;
      const status = !store.ok || (req.query.get("ready") && !ready) ? 503 : 200;
      const summary = !store.ok ? "store unhealthy" : !intakeOpen ? "stopping" : ready ? "ok" : "not ready";
      if (!req.operator) return json(status, { status: summary });
      const pruned = retention.lastSweep && { lastPruned: { at: retention.lastSweep.at.toISOString(), rows: retention.lastSweep.pruned } };
      const mcp = tooling.status();
      return json(status, {
        status: summary,
        ready,
        store: { provider: db.provider, ...store, ...pruned },
        down,
        adapters,
        ...(mcp.length && { mcp }),
        ...(tooling.approvals.waiting && { approvals: { waiting: tooling.approvals.waiting } }),
      });
    },
    { public: true },
  );
  http.route("GET", "/metrics", async () => {
    for (const a of health()) metrics.adapterUp.set({ platform: a.platform, bot: a.botId }, a.ready ? 1 : 0);
    metrics.httpConnections.set(http.connections);
    metrics.httpBufferedBytes.set(http.budget.usedBytes);
    outbound.updateGauges();
    return { status: 200, headers: { "content-type": metrics.contentType }, body: await metrics.text() };
  });

  // The HTTP API v1 (/api/v1/*) and inbound hooks (/hooks/<name>); other modules mount theirs on `api`.
  const api = proactive.mount(http, gateway, (h) => (req) => (intakeOpen || req.method === "GET" ? h(req) : shuttingDown()));
  api.mount("schedules", scheduleApi(jobs), "schedule");

  if (config.CONSOLE_ENABLED) {
    mountConsoleApi((m, p, h) => http.route(m, p, h), { registry, sessions: registry.store, transcript, runner });
    const login = loginRoutes(http.auth, (reason) => metrics.httpRefused.inc({ reason }));
    http.mount("GET", "/login", login.show, "login");
    http.mount("POST", "/login", login.submit, "login", { maxBodyBytes: 4096 });
    http.mount("POST", "/logout", login.logout, "login", { maxBodyBytes: 4096 });
  }

  let timers: NodeJS.Timeout[] = [];
  return {
    config,
    log,
    db,
    registry,
    runner,
    gateway,
    http,
    metrics,
    reflector,
    retention,
    api,
    tooling,
    jobs: { service: jobs, runner: jobsRunner },
    async start() {
      // With OPERATOR_PORT, the console, API and metrics move to a listener of their own; HTTP_PORT keeps the webhooks.
      const split = config.OPERATOR_PORT !== undefined;
      const addr = await http.listen(config.HTTP_PORT, config.HTTP_HOST, split ? "public" : "all");
      if (split) await http.listen(Number(config.OPERATOR_PORT), config.OPERATOR_HOST ?? "127.0.0.1", "operator");
      retention.start();
      outbound.startClaims();
      await tooling.start();
      await gateway.start();
      await tooling
        .afterAdaptersStarted()
        .catch((err) => log.warn({ err: errInfo(err) }, "expiring the previous run's approvals failed; a click on one says it expired"));
      reflector.start(config.REFLECT_SWEEP_INTERVAL);
      jobsRunner.start();
      timers = [
        // A probe write: a store that stopped taking writes shows in /healthz even when no traffic comes.
        setInterval(
          () =>
            void kv.set("switchboard:store-probe", new Date().toISOString()).catch((err) => log.warn({ err: errInfo(err) }, "the store probe write failed")),
          opts.storeProbeMs ?? 5_000,
        ),
        setInterval(
          () =>
            void outbound.flushUnsent().catch((err) => {
              metrics.internalErrors.inc({ where: "flush-unsent" });
              log.warn({ err: errInfo(err) }, "retrying unsent replies failed; the next round tries again");
            }),
          opts.retryIntervalMs ?? 15_000,
        ),
        setInterval(() => runner.evictIdle(30 * 60_000), 60_000),
      ];
      for (const t of timers) t.unref();
      return `http://${addr.address}:${addr.port}`;
    },
    async stop(opts = {}) {
      for (const t of timers) clearInterval(t);
      await retention.stop();
      await jobsRunner.stop();
      intakeOpen = false;
      if (opts.graceMs !== undefined) {
        const deadline = Date.now() + opts.graceMs;
        const left = () => Math.max(0, deadline - Date.now());
        await gateway.stopIntake();
        const { running } = await runner.drain(left());
        const unsent = await outbound.settle(left());
        const level = running || unsent ? "warn" : "info";
        log[level](
          { runningTurns: running, unsentReplies: unsent, graceMs: opts.graceMs },
          running || unsent ? "shutdown grace over: what did not finish is replayed at the next start" : "running turns and queued replies finished",
        );
        await gateway.stop(left());
      } else await gateway.stop();
      await reflector.stop();
      await runner.close();
      await tooling.stop();
      outbound.close();
      await http.close();
      await db.close();
    },
  };
}

/**
 * The console's body limit follows MAX_INBOUND_CHARS: up to 4 bytes per
 * character in UTF-8, plus room for the JSON around the text.
 */
export function consoleBodyLimit(maxInboundChars: number): number {
  return maxInboundChars * 4 + 16 * 1024;
}
