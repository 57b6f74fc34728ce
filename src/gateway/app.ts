import { randomUUID } from "node:crypto";
import type { Config } from "../config.js";
import { createLogger, type Logger } from "../log.js";
import { startTelemetry } from "../telemetry/index.js";
import type { McpConfig } from "../agent/mcp/index.js";
import type { Reflector } from "../runtime/reflection.js";
import type { Runner } from "../runtime/runner.js";
import type { Registry } from "../session/registry.js";
import type { Database, StoreFaults } from "../store/index.js";
import type { Adapter } from "./adapter.js";
import { AdapterRegistry } from "./adapters.js";
import type { Gateway } from "./inbound/gateway.js";
import type { HttpServer } from "./http/server.js";
import type { Retention } from "./retention.js";
import { GatewayMetrics } from "./metrics.js";
import type { ApiServer } from "./http/api/server.js";
import type { JobRunner } from "./jobs/runner.js";
import type { JobService } from "./jobs/service.js";
import { jobService } from "./jobs/wire.js";
import type { Tooling } from "./tooling.js";
import type { AgentsConfig } from "../config/agents.js";
import { agentPart, configuredAgents, type TurnAgentFactory } from "./wiring/agent.js";
import { usagePart } from "./wiring/usage.js";
import { gatewayPart, outboundPart } from "./wiring/gateway.js";
import { httpPart, mountRoutes } from "./wiring/http.js";
import { jobsPart } from "./wiring/jobs.js";
import { lifecycle } from "./wiring/lifecycle.js";
import type { AppBase } from "./wiring/parts.js";
import { runtimePart } from "./wiring/runtime.js";
import { storePart } from "./wiring/store.js";
import { toolingPart } from "./wiring/tooling.js";

export interface AppOptions {
  log?: Logger;
  /** Builds the platform adapters once the app exists (the composition root passes adapters/). */
  adapters?: (config: Config) => Adapter[];
  /** The agent `default`'s factory in place of the configured one (tests). */
  agentFactory?: TurnAgentFactory;
  /** The agents and routes given directly instead of AGENTS_CONFIG's file (tests). */
  agentsConfig?: AgentsConfig;
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

/**
 * The composition of every layer, as `npm start` runs it. Each part is built
 * in wiring/ from the configuration and the parts before it; the adapters'
 * registry comes first, so no part waits for another to exist.
 */
export async function createApp(config: Config, opts: AppOptions = {}): Promise<App> {
  const log = opts.log ?? createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  // Before anything opens: an invalid AGENTS_CONFIG stops the start with one line naming the agent and the field.
  const agentsConfig = opts.agentsConfig ?? configuredAgents(config);
  const adapters = new AdapterRegistry();
  for (const a of opts.adapters?.(config) ?? []) adapters.add(a);
  const base: AppBase = { config, opts, log, metrics: new GatewayMetrics({ processMetrics: true }), adapters, processId: randomUUID() };
  const stores = await storePart(base);
  // Off unless an OTLP endpoint is set (nothing of the SDK is loaded then); shut down last, in lifecycle's stop.
  const telemetry = await startTelemetry(config, log);
  const usage = usagePart(base, stores, agentsConfig);
  const agent = agentPart(base, stores, agentsConfig, usage);
  const jobs = jobService(stores.db, { ...stores, config, now: opts.jobClock, agents: agent.agents });
  const outbound = outboundPart(base, stores);
  const tools = toolingPart(base, stores, { agents: agent.agents, jobs, outbound, meterFor: usage.meterFor });
  const runtime = runtimePart(base, stores, agent, tools, jobs, usage);
  const web = httpPart(base, stores);
  const gateway = gatewayPart(base, stores, runtime, tools, web, outbound);
  const jobsRunner = jobsPart(base, stores, { agent, tools, runtime, gateway, jobs });
  const api = mountRoutes(base, web, { stores, runtime, tools, gateway, jobs, usage });
  const { runner } = runtime;
  const { tooling } = tools;
  return {
    config,
    log,
    db: stores.db,
    registry: stores.registry,
    runner,
    gateway: gateway.gateway,
    http: web.http,
    metrics: base.metrics,
    reflector: agent.reflector,
    retention: stores.retention,
    api,
    tooling,
    jobs: { service: jobs, runner: jobsRunner },
    // The start and stop order of every part.
    ...lifecycle({
      ...base,
      ...stores,
      ...web,
      ...agent,
      gateway: gateway.gateway,
      runner,
      outbound: gateway.outbound,
      tooling,
      jobsRunner,
      storeProbeMs: opts.storeProbeMs,
      retryIntervalMs: opts.retryIntervalMs,
      telemetry,
      meter: usage.meter,
    }),
  };
}
