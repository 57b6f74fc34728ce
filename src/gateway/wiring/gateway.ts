import { sqliteFile } from "../../store/db.js";
import { LeaseStore, purgeSlackWorkspace, RateBudgetStore, SlackInstallationStore, SlackOAuthStateStore } from "../../store/index.js";
import { proactiveParts, type ProactiveParts } from "../http/api/wire.js";
import { Gateway } from "../inbound/gateway.js";
import { Outbound } from "../outbound/outbound.js";
import { SentLog } from "../outbound/sent-log.js";
import { commandMenu } from "./commands.js";
import type { HttpPart } from "./http.js";
import type { AppBase, StorePart } from "./parts.js";
import type { RuntimePart } from "./runtime.js";
import type { ToolingPart } from "./tooling.js";

/** The gateway part: replies out (Outbound, one scheduler per adapter), messages in (Gateway), and the proactive directory between them. */
export interface GatewayPart {
  outbound: Outbound;
  proactive: ProactiveParts;
  gateway: Gateway;
}

/** Outbound delivery for every adapter (the one door out), built before the parts that send through it (the tooling's cards). */
export function outboundPart(base: AppBase, stores: StorePart): Outbound {
  const { config, log, metrics } = base;
  // The sent log lives beside a SQLite file (one host, one process). PostgreSQL marks replies sent
  // over a pool without SQLite's single-writer queue, so the window it closes is far smaller there.
  const sentLog =
    stores.db.provider === "sqlite" && !config.DATABASE_URL.includes(":memory:") ? SentLog.open(`${sqliteFile(config.DATABASE_URL)}.sent.log`) : undefined;
  const outbound = new Outbound({
    deliveries: stores.deliveries,
    metrics,
    log,
    streamAfterMs: base.opts.streamAfterMs,
    owner: base.processId,
    sentLog,
    ...(config.SHARED_DATABASE ? { staleAfterMs: 30_000, budgets: new RateBudgetStore(stores.db) } : {}),
  });
  for (const a of base.adapters.list()) outbound.add(a);
  return outbound;
}

export function gatewayPart(base: AppBase, stores: StorePart, runtime: RuntimePart, tools: ToolingPart, web: HttpPart, outbound: Outbound): GatewayPart {
  const { config, log, metrics } = base;
  // The runner's sink for every platform.
  runtime.runner.withSink([], outbound.sink);
  const proactive = proactiveParts({ ...base, ...stores, outbound });
  const { registry, identities, inbound, kv, ledger } = stores;
  const leases = new LeaseStore(stores.db);
  const gateway = new Gateway({
    registry,
    identities,
    inbound,
    kv,
    ledger,
    adapters: base.adapters,
    conversations: proactive.directory,
    arrivals: runtime.arrivals,
    policy: config,
    runner: runtime.runner,
    outbound,
    pairing: runtime.pairing,
    metrics,
    log,
    // Adapters' routes (webhooks, Slack events, the console's messages) refuse new work once a stop begins.
    // A platform's POST (a webhook delivery) is traced as an HTTP request, the messages it brings as its children.
    route: (m, p, h, o) => web.http.route(m, p, m === "POST" ? web.intake.guard(h) : h, m === "POST" ? { ...o, trace: "webhook" } : o),
    leases,
    processId: base.processId,
    slack: {
      installations: new SlackInstallationStore(stores.db),
      states: new SlackOAuthStateStore(stores.db),
      locks: leases,
      uninstalled: async (install) => {
        if (!config.SLACK_PURGE_ON_UNINSTALL)
          return log.info({ teamId: install.teamId, enterpriseId: install.enterpriseId }, "its transcripts are kept (SLACK_PURGE_ON_UNINSTALL=false)");
        const { teams, deleted } = await purgeSlackWorkspace(stores.db, { teamId: install.teamId, botUserId: install.botUserId });
        log.info({ teams, deleted }, "SLACK_PURGE_ON_UNINSTALL: what the gateway kept of the workspace is deleted");
      },
    },
    ...commandMenu(runtime.commands, config),
    onApprovalClick: (c) => tools.tooling.approvals.click(c),
    agents: tools.agents,
  });
  return { outbound, proactive, gateway };
}
