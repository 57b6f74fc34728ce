import { z } from "zod";

/**
 * How a proactive message names its conversation: the platform's own chat
 * (and thread) id, or a session id standing for the conversation it belongs
 * to. `bot` picks the bot when several of one platform run. Plain zod, so
 * the configuration (HOOKS_CONFIG) can check it without loading the API.
 */
export const CHAT_ID = /^[A-Za-z0-9_.:@-]{1,128}$/;

export const chatRefSchema = z.strictObject({
  platform: z.enum(["telegram", "discord", "slack", "console"]),
  chat: z.string().regex(CHAT_ID, "a chat id as the platform shows it: 1-128 of A-Z a-z 0-9 _ . : @ -"),
  thread: z.string().regex(CHAT_ID, "a thread or topic id as the platform shows it").optional(),
  bot: z.string().regex(CHAT_ID, "the bot's id on its platform").optional(),
});

export const sessionRefSchema = z.strictObject({
  sessionId: z.string().uuid("a session id (a UUID) as /status or GET /api/sessions shows it"),
});

export const conversationRefSchema = z.union([chatRefSchema, sessionRefSchema]);

export type ChatRef = z.infer<typeof chatRefSchema>;
export type ConversationRef = z.infer<typeof conversationRefSchema>;
