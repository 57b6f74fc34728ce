/**
 * The agent of a conversation's session against its place's route (issue
 * 29): a session chosen with `/agent` runs while its route still lets users
 * here choose that agent. Once the route no longer does (AGENTS_CONFIG
 * changed), the next message rotates the conversation back onto a fresh
 * session of the routed agent, and the chat is told; the chosen session stays
 * archived and listed.
 */
import type { RoutedAgent } from "../../agent/routing.js";
import type { Logger } from "../../log.js";
import type { InEvent } from "../../runtime/events.js";
import { agentNameOf } from "../../session/agent-id.js";
import { isSessionError } from "../../session/errors.js";
import type { Info } from "../../session/info.js";
import type { Registry } from "../../session/registry.js";
import type { InboundEnvelope } from "../contract.js";
import type { Outbound } from "../outbound/outbound.js";

/** Whether the place's route lets a session run with `agentId` (the routed agent, or one of its choosable). */
export function allowedHere(routed: RoutedAgent, conversation: InEvent["conversation"], agentId: string): boolean {
  return agentId === conversation.agentId || routed.choosable.includes(agentNameOf(agentId));
}

/** The session to take the message into: `info`, or the routed agent's fresh one when the route no longer allows `info`'s agent. */
export async function sessionOfRoute(
  deps: { registry: Registry; outbound: Outbound; log: Logger },
  env: InboundEnvelope,
  conversation: InEvent["conversation"],
  routed: RoutedAgent,
  info: Info,
): Promise<{ info: Info; moved: boolean }> {
  if (allowedHere(routed, conversation, info.agentId)) return { info, moved: false };
  const was = agentNameOf(info.agentId);
  let current: Info;
  try {
    current = (await deps.registry.rotateChannel({ ...conversation, expectedSessionId: info.id, successorAgentId: conversation.agentId, reason: "rotate" }))
      .current;
  } catch (e) {
    // Another message (or process) moved it first: take the binding as it is now.
    if (!isSessionError(e, "StaleRotation")) throw e;
    return { info: await deps.registry.resolveChatChannel(conversation), moved: true };
  }
  deps.log.info(
    { sessionId: info.id, successor: current.id, was, now: agentNameOf(conversation.agentId) },
    "the route no longer allows the session's agent: rotated back",
  );
  await deps.outbound.enqueue({
    kind: "line",
    to: env.replyTo,
    severity: "info",
    text: `This chat's agent is ${agentNameOf(conversation.agentId)} again: ${was} is no longer available here. Your session with ${was} was kept (see /sessions).`,
  });
  return { info: current, moved: true };
}
