import type { InboundEnvelope } from "../contract.js";
import { addressedElsewhere, type ParsedCommand } from "../../runtime/commands/parse.js";

export type DmPolicy = "pairing" | "allowlist" | "open";
export type GroupPolicy = "pairing" | "allowlist" | "open";

/**
 * GROUP_POLICY, or its default: `open` only when DMs are open too (setups
 * from before group admission keep working), else `pairing`. A closed DM
 * policy with open groups would let anyone reach the agent through a group
 * of their own.
 */
export function groupPolicy(policy: { GROUP_POLICY?: GroupPolicy | undefined; DM_POLICY: DmPolicy }): GroupPolicy {
  return policy.GROUP_POLICY ?? (policy.DM_POLICY === "open" ? "open" : "pairing");
}

/**
 * `platform:chatId` entries (ALLOW_GROUPS) name a group on one platform; `*`
 * admits every group. A chat id written `workspace/channel` (Slack's
 * `T…/C…`) also matches by its channel alone, the id Slack shows users,
 * unless the adapter serves several workspaces (`byWorkspace`: Slack installed
 * by OAuth), where a channel id alone could name a channel of another
 * workspace: there only `workspace/channel` admits.
 */
export function listedGroup(list: readonly string[], env: { platform: string; chatId: string }, byWorkspace = false): boolean {
  if (list.includes("*") || list.includes(`${env.platform}:${env.chatId}`)) return true;
  const slash = env.chatId.indexOf("/");
  return !byWorkspace && slash > 0 && list.includes(`${env.platform}:${env.chatId.slice(slash + 1)}`);
}

/** `platform:senderId` entries (ALLOW_FROM, ADMIN_USERS) name a sender on one platform; `*` allows everyone. */
export function listed(list: readonly string[], env: { platform: string; senderId: string }): boolean {
  return list.includes("*") || list.includes(`${env.platform}:${env.senderId}`);
}

/**
 * Whether the bot answers a group message. With GROUP_REQUIRE_MENTION it
 * answers only when mentioned or replied to, or when a command is addressed
 * to it (`/cmd` or `/cmd@thisbot`, never `/cmd@otherbot`). Messages it does
 * not answer are still kept as context. `command` is the envelope's text
 * parsed once by dispatch.
 */
export function answersInGroup(
  env: Pick<InboundEnvelope, "mentioned">,
  command: ParsedCommand | undefined,
  requireMention: boolean,
  botUsername?: string,
): boolean {
  if (command) return !addressedElsewhere(command, botUsername);
  return !requireMention || env.mentioned;
}
