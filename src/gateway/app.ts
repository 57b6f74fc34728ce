import { randomUUID } from "node:crypto";
import type { Config } from "../config.js";
import { createLogger, type Logger } from "../log.js";
import { personas as loadPersonas } from "../agent/personas.js";
import type { McpConfig } from "../agent/mcp/index.js";
import { Reflector } from "../runtime/reflection.js";
import { Runner } from "../runtime/runner.js";
import { Registry } from "../session/registry.js";
import {
  AccessStore,
  DeliveryStore,
  IdentityStore,
  InboundStore,
  KvStore,
  LeaseStore,
  MemoryStore,
  SessionStore,
  TranscriptStore,
  TurnStore,
  type Database,
  type StoreFaults,
} from "../store/index.js";
import type { Adapter } from "./adapter.js";
import { Gateway } from "./inbound/gateway.js";
import type { HttpServer } from "./http/server.js";
import { Retention } from "./retention.js";
import { GatewayLedger } from "./ledger.js";
import { GatewayMetrics } from "./metrics.js";
import { Outbound } from "./outbound/outbound.js";
import { passesDmPolicy } from "./inbound/access.js";
import { Pairing } from "./inbound/pairing.js";
import { SentLog } from "./outbound/sent-log.js";
import { sqliteFile } from "../store/db.js";
import { proactiveParts } from "./http/api/wire.js";
import type { ApiServer } from "./http/api/server.js";
import { scheduleApi } from "./jobs/api.js";
import type { JobRunner } from "./jobs/runner.js";
import type { JobService } from "./jobs/service.js";
import { jobRunner, jobService } from "./jobs/wire.js";
import { mediaInput } from "./media.js";
import type { FileSource } from "../runtime/media/types.js";
import type { Tooling } from "./tooling.js";
import { agentWithTools, configuredAgentFactory, reflectionCondenser, type TurnAgentFactory } from "./wiring/agent.js";
import { chatCommands, commandMenu, registerInterceptors } from "./wiring/commands.js";
import { configuredHttpServer, Intake, mountConsole, mountHealthAndMetrics } from "./wiring/http.js";
import { lifecycle } from "./wiring/lifecycle.js";
import { openGatewayDatabase } from "./wiring/store.js";
import { configuredTooling } from "./wiring/tooling.js";

export interface AppOptions {
  log?: Logger;
  /** Builds the platform adapters once the app exists (the composition root passes adapters/). */
  adapters?: (config: Config) => Adapter[];
  agentFactory?: TurnAgentFactory;
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

/** The composition of every layer, as `npm start` runs it (the parts are built in wiring/). */
export async function createApp(config: Config, opts: AppOptions = {}): Promise<App> {
  const log = opts.log ?? createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  const metrics = new GatewayMetrics({ processMetrics: true });
  const db = await openGatewayDatabase(config, opts, log, metrics);
  const registry = new Registry(new SessionStore(db));
  const transcript = new TranscriptStore(db);
  const memories = new MemoryStore(db, { cache: !config.SHARED_DATABASE });
  const kv = new KvStore(db);
  const identities = new IdentityStore(db);
  const personaRegistry = loadPersonas(config.PERSONAS ? (JSON.parse(config.PERSONAS) as Record<string, string>) : {});
  const agentFactory = opts.agentFactory ?? configuredAgentFactory(config, log);
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
    condenser: reflectionCondenser(agentFactory),
  });
  const processId = randomUUID();
  let gatewayRef: Gateway | undefined;
  const adapters = () => gatewayRef?.adapters ?? [];
  const access = new AccessStore(db);
  // Asked only when someone other than an admin decides a tool call, not for every message.
  const mayApprove = (who: { platform: string; botId: string; senderId: string }) =>
    passesDmPolicy(
      who,
      config,
      access,
      adapters().find((a) => a.platform === who.platform && a.botId === who.botId),
      false,
    );
  const tooling = configuredTooling(config, { db, kv, mcpConfig: opts.mcpConfig, processId, log, metrics, outbound: () => outbound, mayApprove });
  const jobs = jobService(db, { registry, kv, identities, config, now: opts.jobClock });
  const withTools = agentWithTools({ agentFactory, tooling, registry, transcript, jobs, maxToolRounds: config.TOOL_MAX_ROUNDS });
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
    onRotated: reflector.onRotated,
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
  const pairing = new Pairing(access);
  const commands = chatCommands(config, { transcript, personas: personaRegistry, pairing, tooling, jobs, offered: withTools.offered });
  registerInterceptors(runner, tooling, commands, config);

  const http = configuredHttpServer(config, log, metrics, kv);
  const intake = new Intake();
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
    route: (m, p, h, o) => http.route(m, p, m === "POST" ? intake.guard(h) : h, o),
    leases: new LeaseStore(db),
    processId,
    ...commandMenu(commands, config),
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

  mountHealthAndMetrics({ http, db, gateway, outbound, retention, tooling, metrics, intake });
  // The HTTP API v1 (/api/v1/*) and inbound hooks (/hooks/<name>); other modules mount theirs on `api`.
  const api = proactive.mount(http, gateway, (h) => intake.guard(h, (req) => req.method === "GET"));
  api.mount("schedules", scheduleApi(jobs), "schedule");
  if (config.CONSOLE_ENABLED) mountConsole({ http, registry, transcript, runner, metrics });

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
    ...lifecycle({
      config,
      log,
      db,
      kv,
      http,
      intake,
      gateway,
      runner,
      outbound,
      retention,
      reflector,
      tooling,
      jobsRunner,
      metrics,
      storeProbeMs: opts.storeProbeMs,
      retryIntervalMs: opts.retryIntervalMs,
    }),
  };
}
