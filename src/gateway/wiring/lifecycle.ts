import type { Config } from "../../config.js";
import { errInfo, type Logger } from "../../log.js";
import type { Reflector } from "../../runtime/reflection.js";
import type { Runner } from "../../runtime/runner.js";
import type { Database, KvStore } from "../../store/index.js";
import type { HttpServer } from "../http/server.js";
import type { Gateway } from "../inbound/gateway.js";
import type { JobRunner } from "../jobs/runner.js";
import type { GatewayMetrics } from "../metrics.js";
import type { Outbound } from "../outbound/outbound.js";
import type { Retention } from "../retention.js";
import type { UsageMeter } from "../usage/usage-meter.js";
import type { Tooling } from "../tooling.js";
import type { Telemetry } from "../../telemetry/index.js";
import type { Intake } from "./http.js";

export interface LifecycleParts {
  config: Config;
  log: Logger;
  db: Database;
  kv: KvStore;
  http: HttpServer;
  intake: Intake;
  gateway: Gateway;
  runner: Runner;
  outbound: Outbound;
  retention: Retention;
  reflector: Reflector;
  tooling: Tooling;
  jobsRunner: JobRunner;
  metrics: GatewayMetrics;
  /** How often a probe write checks the store for /healthz (default 5 s). */
  storeProbeMs?: number;
  /** How often unsent replies are retried (default 15 s). */
  retryIntervalMs?: number;
  /** The model meter: its sweep settles budget reservations left past their expiry. */
  meter?: UsageMeter;
  /** Tracing (src/telemetry): flushed and shut down last, within a bounded time. */
  telemetry?: Telemetry;
}

/** The order the app's parts start and stop in (App.start and App.stop describe what each promises). */
export function lifecycle(p: LifecycleParts): { start(): Promise<string>; stop(opts?: { graceMs?: number }): Promise<void> } {
  const { config, log, http, gateway, runner, outbound, tooling } = p;
  let timers: NodeJS.Timeout[] = [];
  return {
    async start() {
      // Until every part is up, routes not ready yet answer 503 with Retry-After (never a 404); /healthz says "starting".
      http.starting();
      // With OPERATOR_PORT, the console, API and metrics move to a listener of their own; HTTP_PORT keeps the webhooks.
      const split = config.OPERATOR_PORT !== undefined;
      const addr = await http.listen(config.HTTP_PORT, config.HTTP_HOST, split ? "public" : "all");
      if (split) await http.listen(Number(config.OPERATOR_PORT), config.OPERATOR_HOST ?? "127.0.0.1", "operator");
      p.retention.start();
      outbound.startClaims();
      // A slow MCP server holds the start at most MCP_START_TIMEOUT; it goes on starting in the background.
      await tooling.start({ waitMs: config.MCP_START_TIMEOUT });
      await gateway.start();
      await tooling
        .afterAdaptersStarted()
        .catch((err) => log.warn({ err: errInfo(err) }, "expiring the previous run's approvals failed; a click on one says it expired"));
      p.reflector.start(config.REFLECT_SWEEP_INTERVAL);
      p.jobsRunner.start();
      timers = periodicPasses(p);
      for (const t of timers) t.unref();
      http.ready();
      return `http://${addr.address}:${addr.port}`;
    },
    async stop(opts = {}) {
      for (const t of timers) clearInterval(t);
      await p.retention.stop();
      await p.jobsRunner.stop();
      p.intake.open = false;
      if (opts.graceMs !== undefined) {
        const deadline = Date.now() + opts.graceMs;
        const left = () => Math.max(0, deadline - Date.now());
        await gateway.stopIntake();
        // Draining from here: no queued turn starts, not even behind one abandoned below.
        const drained = runner.drain(left());
        // A turn waiting for a person would hold the stop for the whole grace: it is abandoned now (replayed after the restart), its card says so.
        await tooling.approvals
          .expireForStop((sessionId) => runner.abandon(sessionId))
          .catch((err) => log.warn({ err: errInfo(err) }, "expiring the approvals with the stop failed; the next start expires them"));
        const { running } = await drained;
        const unsent = await outbound.settle(left());
        const level = running || unsent ? "warn" : "info";
        log[level](
          { runningTurns: running, unsentReplies: unsent, graceMs: opts.graceMs },
          running || unsent ? "shutdown grace over: what did not finish is replayed at the next start" : "running turns and queued replies finished",
        );
        await gateway.stop(left());
      } else await gateway.stop();
      await p.reflector.stop();
      await runner.close();
      await tooling.stop();
      outbound.close();
      await http.close();
      await p.db.close();
      // The spans of the stop itself included; an exporter that hangs holds the stop 3 s at most.
      await p.telemetry?.shutdown(3000);
    },
  };
}

/** The periodic passes of a started app: the store probe, unsent replies, idle sessions, expired budget reservations. */
function periodicPasses(p: LifecycleParts): NodeJS.Timeout[] {
  const { log, outbound, runner } = p;
  return [
    // A probe write: a store that stopped taking writes shows in /healthz even when no traffic comes.
    setInterval(
      () => void p.kv.set("switchboard:store-probe", new Date().toISOString()).catch((err) => log.warn({ err: errInfo(err) }, "the store probe write failed")),
      p.storeProbeMs ?? 5_000,
    ),
    setInterval(
      () =>
        void outbound.flushUnsent().catch((err) => {
          p.metrics.internalErrors.inc({ where: "flush-unsent" });
          log.warn({ err: errInfo(err) }, "retrying unsent replies failed; the next round tries again");
        }),
      p.retryIntervalMs ?? 15_000,
    ),
    setInterval(() => runner.evictIdle(30 * 60_000), 60_000),
    // Reservations of calls that never settled (a process that died mid-call): settled at their reserved amount once expired.
    setInterval(
      () =>
        void p.meter?.sweep().catch((err) => {
          p.metrics.internalErrors.inc({ where: "budget-sweep" });
          log.warn({ err: errInfo(err) }, "settling expired budget reservations failed; the next round tries again");
        }),
      5_000,
    ),
  ];
}
