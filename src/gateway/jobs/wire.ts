import type { Registry as MetricsRegistry } from "prom-client";
import type { Config } from "../../config.js";
import { buildSystemPrompt } from "../../agent/prompt.js";
import type { Agent } from "../../agent/types.js";
import { errInfo, type Logger } from "../../log.js";
import type { Runner } from "../../runtime/runner.js";
import type { Info } from "../../session/info.js";
import type { Registry } from "../../session/registry.js";
import type { Database } from "../../store/db.js";
import type { DeliveryStore } from "../../store/deliveries.js";
import type { IdentityStore } from "../../store/identities.js";
import { JobStore } from "../../store/jobs.js";
import type { KvStore } from "../../store/kv.js";
import type { AdapterRegistry } from "../adapters.js";
import type { GatewayLedger } from "../ledger.js";
import type { Outbound } from "../outbound/outbound.js";
import type { CallPlace } from "../usage/place.js";
import { JobRunner } from "./runner.js";
import { JobService, type JobServiceDeps } from "./service.js";

/** The job service, built early (chat commands and the agent's tool need it). */
export function jobService(
  db: Database,
  deps: {
    registry: Registry;
    kv: KvStore;
    identities: IdentityStore;
    config: Pick<Config, "DEFAULT_TIMEZONE">;
    now?: () => Date;
    /** AGENTS_CONFIG's routes: a job's conversation is its place's agent's. */
    agents?: JobServiceDeps["agents"];
  },
): JobService {
  return new JobService({
    store: new JobStore(db),
    registry: deps.registry,
    kv: deps.kv,
    identities: deps.identities,
    defaultTimezone: deps.config.DEFAULT_TIMEZONE,
    now: deps.now,
    ...(deps.agents && { agents: deps.agents }),
  });
}

/** The job runner, wired to the gateway's outbound ledger, its agent and the operators. */
export function jobRunner(
  service: JobService,
  deps: {
    config: Pick<Config, "SHARED_DATABASE" | "SCHEDULE_MISFIRE_GRACE" | "ADMIN_USERS" | "AGENT_TIMEOUT" | "RECORD_RETENTION">;
    registry: Registry;
    runner: Runner;
    outbound: Outbound;
    deliveries: DeliveryStore;
    ledger: GatewayLedger;
    adapters: AdapterRegistry;
    /** A turn's agent; `place`: the chat a job's turn is made in (its usage and budgets are that chat's). */
    agent: (metadata: Record<string, unknown>, ctx: { session: Info; place?: CallPlace }) => Agent;
    /** A session's persona prompt (its own choice, else its agent's). */
    personaOf: (session: Info) => string;
    log: Logger;
    metrics: MetricsRegistry;
    onError: (where: string) => void;
    owner: string;
    now?: () => Date;
  },
): JobRunner {
  const { config, log } = deps;
  return new JobRunner({
    store: service.store,
    registry: deps.registry,
    deliveries: deps.deliveries,
    log,
    metrics: deps.metrics,
    onError: deps.onError,
    owner: deps.owner,
    now: deps.now,
    shared: config.SHARED_DATABASE,
    misfireGraceMs: config.SCHEDULE_MISFIRE_GRACE,
    agentTimeoutMs: config.AGENT_TIMEOUT,
    deliver: (id) => deps.outbound.enqueue({ kind: "reply", deliveryId: id }),
    canDeliver: (platform, botId) => deps.adapters.get(platform, botId) !== undefined,
    retentionMs: config.RECORD_RETENTION,
    agent: (session, place) => ({ agent: deps.agent(session.metadata, { session, place }), system: buildSystemPrompt(deps.personaOf(session)) }),
    onTranscript: (sessionId) => {
      if (deps.runner.has(sessionId)) deps.runner.get(sessionId).invalidateWindow();
    },
    // Each operator in ADMIN_USERS gets a DM through the delivery ledger, where the platform allows one by user id.
    alertOperators: async (text) => {
      for (const admin of config.ADMIN_USERS) {
        const [platform, ...rest] = admin.split(":");
        const userId = rest.join(":");
        const adapters = deps.adapters.list().filter((a) => a.platform === platform);
        if (!userId || !adapters.length) continue;
        const reachable = adapters.filter((a) => a.facts.dmByUserId);
        if (!reachable.length) {
          log.warn({ admin }, "cannot DM this operator about a paused job on this platform (no DM channel by user id); the log line above stands");
          continue;
        }
        for (const a of reachable) {
          try {
            const r = await deps.ledger.commit({
              sessionId: "",
              inboundIds: [],
              messages: [],
              turnIncrement: 0,
              replies: [{ replyTo: { platform: a.platform, botId: a.botId, chatId: userId, kind: "private" }, text, kind: "notice", severity: "warn" }],
            });
            for (const { id } of r.deliveries) await deps.outbound.enqueue({ kind: "reply", deliveryId: id });
          } catch (err) {
            deps.onError("job-alert-dm");
            log.error({ admin, err: errInfo(err) }, "could not DM an operator about a paused job");
          }
        }
      }
    },
  });
}
