/**
 * The binding strategy: which conversation a message belongs to. This is the
 * one place that decides it, and it is deliberately explicit (like grammY's
 * getSessionKey):
 *
 * - private: user + agent + kind + channel. The same user in two DMs (two bots,
 *   two platforms) has two conversations.
 * - group:   group + agent + kind. The channel is informational only, because
 *   a group's reply channel can vary (a thread, a topic, a reply chain).
 * - main:    user + agent. The user's one main session with this agent.
 *
 * A key is never used as a session id: sessions get random UUIDs.
 */
import type { NewBinding } from "../store/sessions.js";
import { bindingAgentIdOf } from "./agent-id.js";
import { errors } from "./errors.js";
import { isUuid } from "./info.js";

export type BindingScope = "private" | "group" | "main";

/** A conversation: a private chat (user + channel) or a group (userId === groupId). */
export interface ChatRequest {
  agentId: string;
  userId: string;
  groupId?: string;
  channel: string;
  /** A session id from before bindings existed; adopted on a miss if still valid for this conversation. */
  legacyId?: string;
}

const enc = (s: string) => encodeURIComponent(s);

export function privateKey(userId: string, agentId: string, kind: string, channel: string): string {
  return `private|${enc(userId)}|${enc(agentId)}|${enc(kind)}|${enc(channel)}`;
}

export function groupKey(groupId: string, agentId: string, kind: string): string {
  return `group|${enc(groupId)}|${enc(agentId)}|${enc(kind)}`;
}

export function mainKey(userId: string, agentId: string): string {
  return `main|${enc(userId)}|${enc(agentId)}`;
}

/** The binding a conversation resolves on (private: user + agent + chat + channel; group: group + agent + chat). */
export function chatBinding(req: { agentId: string; userId: string; groupId?: string; channel: string }): NewBinding {
  if (!req.agentId || !req.userId || !req.channel) throw errors.invalid("A conversation needs agentId, userId and channel.");
  if (req.groupId !== undefined) {
    if (!isUuid(req.groupId))
      throw errors.invalid("groupId must be the group's canonical UUID, in lower case (map it through the identity store).", { groupId: req.groupId });
    if (req.userId !== req.groupId)
      throw errors.invalid("A group conversation is owned by its group: userId must equal groupId.", { userId: req.userId, groupId: req.groupId });
    return {
      key: groupKey(req.groupId, req.agentId, "chat"),
      scope: "group" satisfies BindingScope,
      agentId: req.agentId,
      userId: req.userId,
      groupId: req.groupId,
      kind: "chat",
      channel: req.channel,
    };
  }
  return {
    key: privateKey(req.userId, req.agentId, "chat", req.channel),
    scope: "private" satisfies BindingScope,
    agentId: req.agentId,
    userId: req.userId,
    groupId: null,
    kind: "chat",
    channel: req.channel,
  };
}

/**
 * The binding key a chat session is reached by, from its own coordinates
 * (they are its conversation's: the binding created it, and /resume only
 * points a conversation at its own sessions); none for other kinds.
 */
export function chatKeyOf(session: {
  kind: string;
  agentId: string;
  userId: string;
  groupId?: string;
  channel: string;
  metadata?: Readonly<Record<string, unknown>>;
}): string | undefined {
  // A session chosen with /agent hangs on the binding of its place's routed agent, not on one of its own.
  return session.kind === "chat" ? chatBinding({ ...session, agentId: bindingAgentIdOf(session) }).key : undefined;
}

/** The binding of a user's main session with an agent. */
export function mainBinding(req: { agentId: string; userId: string; channel: string }): NewBinding {
  if (!req.agentId || !req.userId || !req.channel) throw errors.invalid("A main session needs agentId, userId and channel.");
  return {
    key: mainKey(req.userId, req.agentId),
    scope: "main" satisfies BindingScope,
    agentId: req.agentId,
    userId: req.userId,
    groupId: null,
    kind: "main",
    channel: req.channel,
  };
}
