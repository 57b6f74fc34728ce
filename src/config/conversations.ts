import { z } from "zod";
import { duration, bool, int, list, optionalString } from "./values.js";

/** How inbound messages are taken: their TTL, who may talk (DM and group policies, allowlists, admins), groups and threads, busy chats, shared mode. */
export const conversationSettings = {
  INBOUND_TTL: duration("10m"),
  DM_POLICY: z.enum(["pairing", "allowlist", "open"]).default("pairing"),
  ALLOW_FROM: list(),
  ADMIN_USERS: list(),
  ADMIN_COMMANDS: z
    .string()
    .default("approve")
    .transform((v) =>
      v
        .split(",")
        .map((s) => s.trim().replace(/^\//, "").toLowerCase())
        .filter(Boolean),
    ),
  /**
   * Which groups the bot talks in. Unset: `open` when DM_POLICY=open (as
   * before), else `pairing`, so a stranger cannot get around the DM policy by
   * adding the bot to a group of their own (src/gateway/inbound/policy.ts groupPolicy).
   */
  GROUP_POLICY: optionalString().pipe(
    z.enum(["open", "allowlist", "pairing"], { message: "must be open, allowlist or pairing (or unset: open when DM_POLICY=open, else pairing)" }).optional(),
  ),
  /** Groups always admitted, as platform:chatId (`*`: all). */
  ALLOW_GROUPS: list(),
  /** What the bot does when addressed in a group it was not admitted to: stay silent, or leave the group. */
  GROUP_UNADMITTED: z.enum(["silent", "leave"]).default("silent"),
  GROUP_REQUIRE_MENTION: bool(true),
  THREAD_SESSIONS: z.enum(["own", "parent"]).default("own"),
  BUSY_POLICY: z.enum(["queue", "collect", "interrupt"]).default("queue"),
  MAX_INBOUND_CHARS: int(16_000, 1, 1_000_000),
  SHARED_DATABASE: bool(false),
};
