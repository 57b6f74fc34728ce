import { z } from "zod";
import { duration, bool, int, list } from "./values.js";

/** How inbound messages are taken: their TTL, who may talk (DM policy, allowlists, admins), groups and threads, busy chats, shared mode. */
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
  GROUP_REQUIRE_MENTION: bool(true),
  THREAD_SESSIONS: z.enum(["own", "parent"]).default("own"),
  BUSY_POLICY: z.enum(["queue", "collect", "interrupt"]).default("queue"),
  MAX_INBOUND_CHARS: int(16_000, 1, 1_000_000),
  SHARED_DATABASE: bool(false),
};
