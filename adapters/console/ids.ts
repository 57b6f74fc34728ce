/**
 * Console identifier rules, in one place (DESIGN.md: "each platform fact
 * lives once"). The page never builds a chat id or channel itself: it asks
 * the adapter (GET /api/console/address), so these formats can only drift
 * here, and test/console/ids.test.ts pins them. Changing one orphans every
 * durable binding built from it.
 *
 * Formats (botId defaults to "console"):
 *   private chat id  dm:<userId>            channel console:<botId>:dm:<userId>
 *   group chat id    group:<groupId>        channel console:<botId>:group:<groupId>
 *   thread           threadId <threadId>    channel console:<botId>:group:<groupId>:thread:<threadId>
 * The dm:/group: prefixes keep a user and a group of the same name apart in
 * the gateway's per-chat queues, identities and the page's history.
 */
import type { ReplyAddress } from "../types.js";
import { channelOf } from "../../src/session/channel.js";

export const PLATFORM = "console" as const;
export const DEFAULT_BOT_ID = "console";
export const BOT_USERNAME = "switchboard";

/**
 * A user, group, thread or bot id the console accepts. No ":" (it separates
 * channel segments) and nothing that needs escaping in a URL or a selector.
 */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
export const ID_RULE = "1-64 characters of A-Z, a-z, 0-9, '_', '.' and '-', starting with a letter or digit";

export function isConsoleId(v: unknown): v is string {
  return typeof v === "string" && ID_PATTERN.test(v);
}

function must(what: string, v: string): string {
  if (!isConsoleId(v)) throw new Error(`console ${what} ${JSON.stringify(v)} is not valid: use ${ID_RULE}`);
  return v;
}

export type ConsoleChat = { kind: "private"; userId: string } | { kind: "group"; groupId: string };

/** The chat id of a simulated private chat with `userId`. */
export function dmChatId(userId: string): string {
  return `dm:${must("user id", userId)}`;
}

export function groupChatId(groupId: string): string {
  return `group:${must("group id", groupId)}`;
}

/** Inverse of dmChatId / groupChatId; undefined for anything else. */
export function parseChatId(chatId: string): ConsoleChat | undefined {
  const m = /^(dm|group):(.*)$/.exec(chatId);
  if (!m || !isConsoleId(m[2])) return undefined;
  return m[1] === "dm" ? { kind: "private", userId: m[2] } : { kind: "group", groupId: m[2] };
}

/** The durable channel of a private chat: `console:<botId>:dm:<userId>`. */
export function dmChannel(botId: string, userId: string): string {
  return channelOf(PLATFORM, must("bot id", botId), "dm", must("user id", userId));
}

/** The (informational) channel of a group or thread: no `dm` segment, so isPrivateChannel() says false. */
export function groupChannel(botId: string, groupId: string, threadId?: string): string {
  const base = [PLATFORM, must("bot id", botId), "group", must("group id", groupId)];
  return channelOf(...(threadId === undefined ? base : [...base, "thread", must("thread id", threadId)]));
}

export type ParsedChannel = { botId: string; kind: "dm"; userId: string } | { botId: string; kind: "group"; groupId: string; threadId?: string };

/** Inverse of dmChannel / groupChannel; undefined for anything else. */
export function parseChannel(channel: string): ParsedChannel | undefined {
  const p = channel.split(":");
  if (p[0] !== PLATFORM || !p.slice(1).every(isConsoleId)) return undefined;
  const [, botId, kind, id, sub, threadId] = p as [string, string, string, string, string?, string?];
  if (p.length === 4 && kind === "dm") return { botId, kind: "dm", userId: id };
  if (p.length === 4 && kind === "group") return { botId, kind: "group", groupId: id };
  if (p.length === 6 && kind === "group" && sub === "thread" && threadId !== undefined) return { botId, kind: "group", groupId: id, threadId };
  return undefined;
}

/** The channel an inbound message in this chat carries. */
export function channelOfChat(botId: string, chat: ConsoleChat, threadId?: string): string {
  return chat.kind === "private" ? dmChannel(botId, chat.userId) : groupChannel(botId, chat.groupId, threadId);
}

export function encodeReplyAddress(botId: string, chatId: string, threadId?: string): ReplyAddress & { platform: typeof PLATFORM } {
  const a: ReplyAddress & { platform: typeof PLATFORM } = { platform: PLATFORM, botId, chatId };
  if (threadId !== undefined) a.threadId = threadId;
  return a;
}

export interface ConsoleTarget {
  chatId: string;
  chat: ConsoleChat;
  threadId?: string;
}

/** Inverse of encodeReplyAddress. Returns an explanation instead of throwing, so the sink can raise its own error type. */
export function decodeReplyAddress(a: ReplyAddress, botId: string): ConsoleTarget | { error: string } {
  if (a.platform !== PLATFORM) return { error: `reply address is for platform "${a.platform}", not console: route it to that platform's adapter` };
  if (a.botId !== botId) return { error: `reply address is for console bot "${a.botId}", but this adapter is "${botId}"` };
  const chat = parseChatId(a.chatId);
  if (!chat) return { error: `reply address chatId "${a.chatId}" is not a console chat id (dm:<userId> or group:<groupId>)` };
  if (a.threadId === undefined) return { chatId: a.chatId, chat };
  if (chat.kind !== "group" || !isConsoleId(a.threadId))
    return { error: `reply address threadId "${a.threadId}" is not a console thread of a group (${ID_RULE})` };
  return { chatId: a.chatId, chat, threadId: a.threadId };
}

/**
 * The key of one conversation's in-memory history and of its events on the
 * page: the chat, and the thread inside it when there is one.
 */
export function conversationKey(chatId: string, threadId?: string): string {
  return threadId === undefined ? chatId : `${chatId}/thread:${threadId}`;
}

/** Client-chosen event ids (the dedupe key): wider than ID_PATTERN so a UUID or a ULID fits. */
export const EVENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

/** Whether the text addresses the bot by name: `@switchboard` as a whole word, any case. */
export function mentionsBot(text: string, username: string = BOT_USERNAME): boolean {
  const escaped = username.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(^|[^A-Za-z0-9_@])@${escaped}(?![A-Za-z0-9_])`, "i").test(text);
}
