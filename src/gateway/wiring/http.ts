import type { Config } from "../../config.js";
import type { Runner } from "../../runtime/runner.js";
import type { Registry } from "../../session/registry.js";
import type { Database, KvStore, TranscriptStore } from "../../store/index.js";
import type { HttpHandler, HttpRequest, HttpResponse } from "../adapter.js";
import { mountConsoleApi } from "../http/console-api.js";
import { mountSlackInstallationsApi } from "../http/slack-installations-api.js";
import { mountUsageApi, type UsageApiDeps } from "../http/usage-api.js";
import type { UsagePart } from "./usage.js";
import { SlackInstallationStore } from "../../store/index.js";
import { loginRoutes } from "../http/login.js";
import { OperatorAuth } from "../http/operator-auth.js";
import { HttpServer, json, unavailable } from "../http/server.js";
import type { AdapterRegistry } from "../adapters.js";
import type { ApiServer } from "../http/api/server.js";
import { scheduleApi } from "../jobs/api.js";
import type { JobService } from "../jobs/service.js";
import type { GatewayMetrics } from "../metrics.js";
import type { Outbound } from "../outbound/outbound.js";
import type { Retention } from "../retention.js";
import type { Tooling } from "../tooling.js";
import type { Logger } from "../../log.js";
import type { GatewayPart } from "./gateway.js";
import type { AppBase, StorePart } from "./parts.js";
import type { RuntimePart } from "./runtime.js";
import type { ToolingPart } from "./tooling.js";

/**
 * The console's body limit follows MAX_INBOUND_CHARS: up to 4 bytes per
 * character in UTF-8, plus room for the JSON around the text.
 */
export function consoleBodyLimit(maxInboundChars: number): number {
  return maxInboundChars * 4 + 16 * 1024;
}

/** The one HTTP server, with the operator auth (login sessions revoked in `kv`) and the edge limits the configuration sets. */
export function configuredHttpServer(config: Config, log: Logger, metrics: GatewayMetrics, kv?: KvStore): HttpServer {
  return new HttpServer({
    log,
    metrics,
    auth: new OperatorAuth({
      token: config.OPERATOR_TOKEN,
      publicUrl: config.PUBLIC_URL,
      bindHosts: [config.OPERATOR_PORT !== undefined ? (config.OPERATOR_HOST ?? "127.0.0.1") : config.HTTP_HOST],
      trustLoopback: config.TRUST_LOOPBACK,
      ...(kv && { kv }),
    }),
    limits: {
      maxConnections: config.HTTP_MAX_CONNECTIONS,
      maxConnectionsPerAddress: config.HTTP_MAX_CONNECTIONS_PER_ADDRESS,
      uncappedAddresses: config.HTTP_MAX_CONNECTIONS_PER_ADDRESS_EXEMPT,
      maxBufferedBytes: config.HTTP_MAX_BUFFERED_MB * 1024 * 1024,
      headersTimeoutMs: config.HTTP_HEADERS_TIMEOUT,
      requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT,
      defaultMaxBodyBytes: consoleBodyLimit(config.MAX_INBOUND_CHARS),
    },
  });
}

/** Whether new work is taken: open until a stop begins, when routes that would start work answer 503. */
export class Intake {
  open = true;

  /** Wraps a handler that starts work: once intake closes it answers 503 with Retry-After. */
  guard(handler: HttpHandler, passes: (req: HttpRequest) => boolean = () => false): HttpHandler {
    return (req) => (this.open || passes(req) ? handler(req) : shuttingDown());
  }
}

async function shuttingDown(): Promise<HttpResponse> {
  return unavailable("switchboard is shutting down; send this again in a few seconds", 5);
}

/**
 * /healthz and /metrics. /healthz is public, so a load balancer can probe
 * it; the details are for operators (the token; loopback only without a
 * token or with TRUST_LOOPBACK, and never through a proxy). The store's health
 * comes from real outcomes (every call, and a probe write every few seconds):
 * a store that cannot write, or a SQLite file deleted or replaced, answers
 * 503 with the reason.
 */
export function mountHealthAndMetrics(deps: {
  http: HttpServer;
  db: Database;
  adapters: AdapterRegistry;
  outbound: Outbound;
  retention: Retention;
  tooling: Tooling;
  metrics: GatewayMetrics;
  intake: Intake;
}): void {
  const { http, db, adapters: registry, outbound, retention, tooling, metrics, intake } = deps;
  const health = () => registry.list().map((a) => ({ platform: a.platform, botId: a.botId, ...a.health() }));
  http.route(
    "GET",
    "/healthz",
    async (req) => {
      const adapters = health();
      const store = db.health();
      const down = adapters.filter((a) => !a.ready).map((a) => `${a.platform}${a.botId ? `:${a.botId}` : ""}${a.detail ? ` (${a.detail})` : ""}`);
      const ready = intake.open && !http.isStarting && down.length === 0 && store.ok;
      const status = !store.ok || (req.query.get("ready") && !ready) ? 503 : 200;
      const summary = !store.ok ? "store unhealthy" : !intake.open ? "stopping" : http.isStarting ? "starting" : ready ? "ok" : "not ready";
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
}

/** The web console's API and its login pages (CONSOLE_ENABLED). */
export function mountConsole(deps: {
  http: HttpServer;
  db: Database;
  registry: Registry;
  transcript: TranscriptStore;
  runner: Runner;
  metrics: GatewayMetrics;
  /** The usage page's API (issue 29). */
  usage?: UsageApiDeps;
}): void {
  const { http, registry, transcript, runner, metrics } = deps;
  mountConsoleApi((m, p, h) => http.route(m, p, h), { registry, sessions: registry.store, transcript, runner });
  mountSlackInstallationsApi((m, p, h) => http.route(m, p, h), new SlackInstallationStore(deps.db));
  if (deps.usage) mountUsageApi((m, p, h) => http.route(m, p, h), deps.usage);
  const login = loginRoutes(http.auth, (reason) => metrics.httpRefused.inc({ reason }));
  http.mount("GET", "/login", login.show, "login");
  http.mount("POST", "/login", login.submit, "login", { maxBodyBytes: 4096 });
  http.mount("POST", "/logout", login.logout, "login", { maxBodyBytes: 4096 });
}

/** The HTTP part: the one server, and the intake switch a stop turns off. */
export interface HttpPart {
  http: HttpServer;
  intake: Intake;
}

export function httpPart(base: AppBase, stores: StorePart): HttpPart {
  return { http: configuredHttpServer(base.config, base.log, base.metrics, stores.kv), intake: new Intake() };
}

/** Every route that needs the other parts: /healthz and /metrics, the HTTP API v1 with its hooks and schedules, and the console. */
export function mountRoutes(
  base: AppBase,
  web: HttpPart,
  parts: { stores: StorePart; runtime: RuntimePart; tools: ToolingPart; gateway: GatewayPart; jobs: JobService; usage?: UsagePart },
): ApiServer {
  const { http, intake } = web;
  const { stores, runtime, gateway } = parts;
  const { metrics } = base;
  mountHealthAndMetrics({ ...stores, http, intake, adapters: base.adapters, outbound: gateway.outbound, tooling: parts.tools.tooling, metrics });
  // The HTTP API v1 (/api/v1/*) and inbound hooks (/hooks/<name>); other modules mount theirs on `api`.
  const api = gateway.proactive.mount(http, gateway.gateway, (h) => intake.guard(h, (req) => req.method === "GET"));
  api.mount("schedules", scheduleApi(parts.jobs), "schedule");
  const usage = parts.usage && {
    usage: parts.usage.usage,
    budgets: parts.usage.budgets,
    configured: parts.usage.agents.budgets,
    timezone: base.config.DEFAULT_TIMEZONE,
  };
  if (base.config.CONSOLE_ENABLED) mountConsole({ ...stores, http, runner: runtime.runner, metrics, ...(usage && { usage }) });
  return api;
}
