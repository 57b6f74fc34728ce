import type { Config } from "../../config.js";
import type { AgentsConfig } from "../../config/agents.js";
import type { ModelMeter } from "../../agent/model-meter.js";
import type { AgentContext } from "../../runtime/runner.js";
import { agentNameOf } from "../../session/agent-id.js";
import type { Info } from "../../session/info.js";
import { BudgetStore, UsageStore } from "../../store/index.js";
import type { MessageEvent } from "../../runtime/events.js";
import type { MeterPlace } from "../usage/budgets.js";
import { UsageMeter } from "../usage/usage-meter.js";
import type { AppBase, StorePart } from "./parts.js";

/** How long a reservation is held: a model call ends within AGENT_TIMEOUT (the turn's clock aborts it), plus a margin. */
export const reservationTtlMs = (config: Pick<Config, "AGENT_TIMEOUT">) => config.AGENT_TIMEOUT + Math.min(30_000, config.AGENT_TIMEOUT);

/** The usage part: the rows, the budgets, the meter, and each turn's meter for its place. */
export interface UsagePart {
  agents: AgentsConfig;
  usage: UsageStore;
  budgets: BudgetStore;
  meter: UsageMeter;
  /** A turn's meter: its session's agent, its sender, its chat and workspace. */
  meterFor(ctx: AgentContext): ModelMeter;
  /** A message's meter before its turn has a session (its attachments' transcriptions). */
  meterForEvent(ev: MessageEvent): ModelMeter;
  /** Reflection's meter for a session (no sender: a private session's owner, the agent's and the global budgets apply). */
  meterForSession(session: Info): ModelMeter;
}

/**
 * Where a call is made: the session's agent, the message's sender, chat and workspace. Without a message
 * (a scheduled job's turn, reflection) a private session's owner is its user, so the user's budgets apply.
 */
function placeOf(agentId: string, sessionId: string, event: MessageEvent | undefined, session?: Pick<Info, "userId" | "groupId">): MeterPlace {
  const owner = session && session.groupId === undefined ? session.userId : "";
  return {
    agent: agentNameOf(agentId),
    sessionId,
    userId: event ? (event.origin.userId ?? "") : owner,
    platform: event?.origin.platform ?? "",
    chatId: event?.origin.chatId ?? "",
    ...(event?.origin.workspace !== undefined && { workspace: event.origin.workspace }),
  };
}

/** `agents`: AGENTS_CONFIG as the app read it at start (its prices and budgets). */
export function usagePart(base: Pick<AppBase, "config" | "log" | "metrics">, stores: Pick<StorePart, "db">, agents: AgentsConfig): UsagePart {
  const { config, log, metrics } = base;
  const budgets = new BudgetStore(stores.db);
  const meter = new UsageMeter({ store: budgets, agents, timezone: config.DEFAULT_TIMEZONE, reservationTtlMs: reservationTtlMs(config), log, metrics });
  return {
    agents,
    usage: new UsageStore(stores.db),
    budgets,
    meter,
    meterFor: ({ session, event }) => meter.for(placeOf(session.agentId, session.id, event, session)),
    meterForEvent: (ev) => meter.for(placeOf(ev.conversation.agentId, ev.boundSessionId ?? "", ev)),
    meterForSession: (session) => {
      // The condenser runs an ordinary agent turn: its calls are the review's.
      const m = meter.for(placeOf(session.agentId, session.id, undefined, session));
      return { reserve: (call) => m.reserve({ ...call, kind: "reflection" }) };
    },
  };
}
