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
export type BindingScope = "private" | "group" | "main";

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
