import { DEFAULT_AGENT } from "../config/agents.js";

/**
 * A session's agent, as its binding carries it (issue 29). The agent
 * `default` keeps the bot's id as the agent id, so today's bindings (made
 * before there were several agents) stay exactly as they are; any other agent
 * is `<bot>~<agent>`, a different binding key, so a conversation routed to
 * another agent gets its own session and never one whose history another
 * agent made.
 */
export function agentIdFor(botId: string, agent: string): string {
  return agent === DEFAULT_AGENT ? botId : `${botId}~${agent}`;
}

/** The agent's name in AGENTS_CONFIG from a session's (or binding's) agent id. */
export function agentNameOf(agentId: string): string {
  const i = agentId.lastIndexOf("~");
  return i < 0 ? DEFAULT_AGENT : agentId.slice(i + 1);
}

/** The bot part of an agent id. */
export function botOfAgentId(agentId: string): string {
  const i = agentId.lastIndexOf("~");
  return i < 0 ? agentId : agentId.slice(0, i);
}

/**
 * Where a session chosen with `/agent` keeps the agent id of the binding it
 * hangs on: the binding stays keyed by the place's routed agent while the
 * session runs another, so the binding's key is not the session's agent id.
 * Written by the rotation that makes the session (rotation.ts successorRecord).
 */
export const BINDING_AGENT_KEY = "agent.binding";

/** The agent id of the binding a session belongs to: its own, unless it was chosen with `/agent`. */
export function bindingAgentIdOf(session: { agentId: string; metadata?: Readonly<Record<string, unknown>> }): string {
  const bound = session.metadata?.[BINDING_AGENT_KEY];
  return typeof bound === "string" && bound.length > 0 ? bound : session.agentId;
}
