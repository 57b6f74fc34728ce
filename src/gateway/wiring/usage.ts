import type { Config } from "../../config.js";
import type { AgentsConfig } from "../../config/agents.js";
import type { ModelMeter } from "../../agent/model-meter.js";
import type { AgentContext } from "../../runtime/runner.js";
import { agentNameOf } from "../../session/agent-id.js";
import { chatKeyOf } from "../../session/binding-key.js";
import type { Info } from "../../session/info.js";
import { codecs } from "../../store/codecs.js";
import { BudgetStore, UsageStore, type Database } from "../../store/index.js";
import { ConversationAddressStore } from "../../store/proactive.js";
import type { MessageEvent } from "../../runtime/events.js";
import type { MeterPlace } from "../usage/budgets.js";
import { callPlace, type CallPlace } from "../usage/place.js";
import { UsageMeter } from "../usage/usage-meter.js";
import type { AppBase, StorePart } from "./parts.js";

/** How long a reservation is held: a model call ends within AGENT_TIMEOUT (the turn's clock aborts it), plus a margin. */
export const reservationTtlMs = (config: Pick<Config, "AGENT_TIMEOUT">) => config.AGENT_TIMEOUT + Math.min(30_000, config.AGENT_TIMEOUT);

export type { CallPlace };

/** A turn's context, and where it is made when it answers no message (a scheduled job's turn). */
export type PlacedContext = AgentContext & { place?: CallPlace };

/** The usage part: the rows, the budgets, the meter, and each turn's meter for its place. */
export interface UsagePart {
  agents: AgentsConfig;
  usage: UsageStore;
  budgets: BudgetStore;
  meter: UsageMeter;
  /** A turn's meter: its session's agent, its sender, its chat and workspace (a job's turn: its `place`). */
  meterFor(ctx: PlacedContext): ModelMeter;
  /** A message's meter before its turn has a session (its attachments' transcriptions). */
  meterForEvent(ev: MessageEvent): ModelMeter;
  /** Reflection's meter for a session (no sender: a private session's owner is its user) at its chat (`place`, from placeOfSession). */
  meterForSession(session: Info, place?: CallPlace): ModelMeter;
  /** The chat a session's conversation was last reached at (its recorded address); undefined when none is recorded. */
  placeOfSession(session: Info): Promise<CallPlace | undefined>;
}

/**
 * Where a call is made: the session's agent, the message's sender, chat and workspace. Without a message
 * (a scheduled job's turn, reflection) a private session's owner is its user, so the user's budgets apply,
 * and `place` (the job's or the reviewed session's chat) is its chat, workspace and platform.
 */
function placeOf(
  agentId: string,
  sessionId: string,
  event: MessageEvent | undefined,
  session?: Pick<Info, "userId" | "groupId">,
  place?: CallPlace,
): MeterPlace {
  const owner = session && session.groupId === undefined ? session.userId : "";
  const where = event ? event.origin : place;
  return {
    agent: agentNameOf(agentId),
    sessionId,
    userId: event ? (event.origin.userId ?? "") : owner,
    platform: where?.platform ?? "",
    chatId: where?.chatId ?? "",
    ...(where?.workspace !== undefined && { workspace: where.workspace }),
  };
}

/**
 * The chat a session's conversation was last reached at: the address the gateway recorded for its binding
 * (a chat session's; other kinds, and a conversation with no recorded message, have none).
 */
export function sessionPlaces(db: Database): (session: Info) => Promise<CallPlace | undefined> {
  const addresses = new ConversationAddressStore(db);
  return async (session) => {
    const key = chatKeyOf(session);
    const r = key === undefined ? undefined : await addresses.byBinding(key);
    if (!r) return undefined;
    return callPlace({ ...r, workspace: codecs.conversationTemplate.decode(r.template, r.key).workspace });
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
    meterFor: ({ session, event, place }) => meter.for(placeOf(session.agentId, session.id, event, session, place)),
    meterForEvent: (ev) => meter.for(placeOf(ev.conversation.agentId, ev.boundSessionId ?? "", ev)),
    meterForSession: (session, place) => {
      // The condenser runs an ordinary agent turn: its calls are the review's.
      const m = meter.for(placeOf(session.agentId, session.id, undefined, session, place));
      return { reserve: (call) => m.reserve({ ...call, kind: "reflection" }) };
    },
    placeOfSession: sessionPlaces(stores.db),
  };
}
