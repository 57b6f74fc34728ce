import type { InboundEnvelope } from "../contract.js";
import { addressedElsewhere, parseCommand } from "../../runtime/commands/parse.js";

export type DmPolicy = "pairing" | "allowlist" | "open";

/** `platform:senderId` entries (ALLOW_FROM, ADMIN_USERS) name a sender on one platform; `*` allows everyone. */
export function listed(list: readonly string[], env: Pick<InboundEnvelope, "platform" | "senderId">): boolean {
  return list.includes("*") || list.includes(`${env.platform}:${env.senderId}`);
}

/**
 * Whether the bot answers a group message. With GROUP_REQUIRE_MENTION it
 * answers only when mentioned or replied to, or when a command is addressed
 * to it (`/cmd` or `/cmd@thisbot`, never `/cmd@otherbot`). Messages it does
 * not answer are still kept as context.
 */
export function answersInGroup(env: InboundEnvelope, requireMention: boolean, botUsername?: string): boolean {
  const cmd = parseCommand(env.text);
  if (cmd) return !addressedElsewhere(cmd, botUsername);
  return !requireMention || env.mentioned;
}
