/**
 * The keys the gateway orders and finds things by. One function per key, so
 * a chat is never named two ways. (Which session a conversation is bound to
 * is the registry's binding key, src/session/binding-key.ts: a different
 * thing, owned by the domain.)
 */

/** One bot on one platform (an adapter). */
export const adapterKey = (platform: string, botId: string): string => `${platform}:${botId}`;

/**
 * One chat, or one thread of it, of one bot: inbound events of a chat are
 * handled in this order and its replies sent in this order.
 */
export const chatKey = (a: { platform: string; botId: string; chatId: string; threadId?: string }): string =>
  `${a.platform}:${a.botId}:${a.chatId}:${a.threadId ?? ""}`;
