import type { Place, RoutedAgent } from "../../agent/routing.js";
import { DEFAULT_AGENT } from "../../config/agents.js";
import type { ParsedCommand } from "../../runtime/commands/parse.js";
import { agentIdFor } from "../../session/agent-id.js";
import type { InEvent } from "../../runtime/events.js";
import type { IdentityStore } from "../../store/identities.js";
import type { InboundEnvelope } from "../contract.js";
import type { GatewayPolicy } from "./gateway.js";
import { chatKey } from "../keys.js";
import { answersInGroup } from "./policy.js";

/** The conversation an event is recorded under: its chat, and its thread only when threads have sessions of their own. */
export function conversationKey(env: InboundEnvelope, threadSessions: GatewayPolicy["THREAD_SESSIONS"]): string {
  return chatKey({ ...env, threadId: env.chatKind === "thread" && threadSessions === "own" ? env.threadId : undefined });
}

/**
 * Who is talking, and in which conversation: the sender's user, and for a
 * group (or a thread with sessions of its own) the group; plus whether the bot
 * answers (a group may want a mention) or only keeps the message as context.
 */
export async function identify(
  env: InboundEnvelope,
  identities: IdentityStore,
  policy: Pick<GatewayPolicy, "THREAD_SESSIONS" | "GROUP_REQUIRE_MENTION">,
  botUsername: string | undefined,
  command: ParsedCommand | undefined,
  routed: RoutedAgent = { agent: DEFAULT_AGENT, choosable: [DEFAULT_AGENT] },
): Promise<{ userId: string; conversation: InEvent["conversation"]; respond: boolean }> {
  // The agent is part of the binding: a place routed to another agent gets a session of its own (the default agent keeps the bot id).
  const agentId = agentIdFor(env.botId, routed.agent);
  const userId = await identities.userId(env.platform, env.senderId, env.senderName);
  if (env.chatKind === "private") return { userId, conversation: { agentId, userId, channel: env.channel }, respond: true };
  let groupId = await identities.groupId(env.platform, env.chatId, { title: env.chatTitle });
  if (env.chatKind === "thread" && env.threadId && policy.THREAD_SESSIONS === "own") {
    groupId = await identities.groupId(env.platform, `${env.chatId}:thread:${env.threadId}`, { parentId: groupId });
  }
  return {
    userId,
    conversation: { agentId, userId: groupId, groupId, channel: env.channel },
    respond: answersInGroup(env, command, policy.GROUP_REQUIRE_MENTION, botUsername),
  };
}

/** Where a message was said, as AGENTS_CONFIG's routes name it (src/agent/routing.ts). */
export function placeOf(env: InboundEnvelope): Place {
  return {
    platform: env.platform,
    ...(env.workspace !== undefined && { workspace: env.workspace }),
    chatId: env.chatId,
    ...(env.replyTo.chatId !== env.chatId && { replyChatId: env.replyTo.chatId }),
    ...(env.threadId !== undefined && { threadId: env.threadId }),
    chatKind: env.chatKind,
    senderId: env.senderId,
  };
}
