/**
 * Which agent answers in a place (issue 29): AGENTS_CONFIG's routes matched
 * against where a message was said. Pure: no store, no clock; the gateway asks
 * it where a conversation's binding is resolved, so the agent is part of the
 * binding key (src/session/agent-id.ts).
 *
 * Precedence: the most specific rule wins. Each field a rule matches on has a
 * rank, most specific first:
 *
 *   sender > thread > chat > team / guild > kind > platform
 *
 * and a rule with no field at all is the catch-all. Rules compare by their
 * most specific field; when that is the same, by their next one, and so on
 * (so `chat + sender` beats `sender` alone, and `sender` alone beats
 * `chat + team + kind + platform`). Two rules with the same set of fields: the
 * first in the file wins. No rule matches: the agent `default`.
 */
import { DEFAULT_AGENT, type Route, type RouteMatch } from "../config/agents.js";

/** Where a message was said, as routes name it. */
export interface Place {
  platform: string;
  /** The Slack team or Discord guild the chat is in (InboundEnvelope.workspace). */
  workspace?: string;
  chatId: string;
  /** The chat's id as the platform's API takes it, when it differs (a Slack channel `C…` beside the envelope's `<team>/<channel>`). */
  replyChatId?: string;
  threadId?: string;
  chatKind: "private" | "group" | "thread";
  senderId: string;
}

/** The routed agent, and whom a user here may switch to with `/agent <name>` (the routed agent first). */
export interface RoutedAgent {
  agent: string;
  choosable: readonly string[];
  /** The rule that decided (1-based, as errors and `/agent` name it); undefined: no rule matched. */
  rule?: number;
}

/** Each match field's weight: a power of two per rank, so one more specific field outweighs all less specific ones together. */
export const FIELD_WEIGHT: Readonly<Record<keyof RouteMatch, number>> = {
  sender: 64,
  thread: 32,
  chat: 16,
  team: 8,
  guild: 8,
  kind: 4,
  platform: 2,
};

/** How specific a rule is: the sum of its fields' weights (0: the catch-all). */
export function specificity(match: RouteMatch): number {
  let s = 0;
  for (const [field, weight] of Object.entries(FIELD_WEIGHT) as [keyof RouteMatch, number][]) if (match[field] !== undefined) s += weight;
  return s;
}

/** Whether a rule's every field holds in the place. A thread is a group's place: `kind: "group"` matches it. */
export function matches(match: RouteMatch, place: Place): boolean {
  if (match.platform !== undefined && match.platform !== place.platform) return false;
  // A Slack team and a Discord guild are the same kind of place, each on its own platform.
  if (match.team !== undefined && (place.platform !== "slack" || match.team !== place.workspace)) return false;
  if (match.guild !== undefined && (place.platform !== "discord" || match.guild !== place.workspace)) return false;
  if (match.chat !== undefined && match.chat !== place.chatId && match.chat !== place.replyChatId) return false;
  if (match.thread !== undefined && match.thread !== place.threadId) return false;
  if (match.kind !== undefined && match.kind !== (place.chatKind === "private" ? "private" : "group")) return false;
  if (match.sender !== undefined && match.sender !== place.senderId) return false;
  return true;
}

/** The agent of a place: the most specific matching route's (ties: the first in the file), else `default`. */
export function routeAgent(routes: readonly Route[], place: Place): RoutedAgent {
  let best: { route: Route; index: number; score: number } | undefined;
  routes.forEach((route, index) => {
    if (!matches(route.match, place)) return;
    const score = specificity(route.match);
    if (!best || score > best.score) best = { route, index, score };
  });
  if (!best) return { agent: DEFAULT_AGENT, choosable: [DEFAULT_AGENT] };
  const { route, index } = best;
  return { agent: route.agent, choosable: [...new Set([route.agent, ...(route.choosable ?? [])])], rule: index + 1 };
}
