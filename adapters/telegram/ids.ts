/**
 * Telegram identifier rules, in one place (DESIGN.md: "each platform fact
 * lives once"). Everything that turns a Telegram chat, topic, message or bot
 * id into a Switchboard string, or back, goes through here, and the
 * round-trip tests in test/adapters/telegram/ids.test.ts pin the formats:
 * changing one of them orphans every durable binding built from it.
 */
import type { ChatKind, ReplyAddress } from "../types.js";
import { channelOf } from "../../src/session/channel.js";

export const PLATFORM = "telegram" as const;

/** Telegram ids are 64-bit on the wire but documented to fit in 52 bits, so a JS number holds them exactly. */
export function isTelegramId(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v);
}

const TOKEN_RE = /^([1-9]\d{0,15}):[A-Za-z0-9_-]+$/;

/**
 * The bot's id is the part of the token before the colon. Returns undefined
 * for anything that is not shaped like a token; callers must never echo the
 * token itself in the error they raise.
 */
export function botIdFromToken(token: string): string | undefined {
  const m = TOKEN_RE.exec(token.trim());
  return m?.[1];
}

/** The durable channel of a private chat: `telegram:<botId>:dm:<chatId>`. */
export function dmChannel(botId: string, chatId: number | string): string {
  return channelOf(PLATFORM, botId, "dm", String(chatId));
}

/**
 * The (informational) channel of a group or forum topic. It has no `dm`
 * segment, so isPrivateChannel() says false; groups bind on the group, not on
 * this value.
 */
export function groupChannel(botId: string, chatId: number | string, threadId?: number | string): string {
  return threadId === undefined
    ? channelOf(PLATFORM, botId, "group", String(chatId))
    : channelOf(PLATFORM, botId, "group", String(chatId), "topic", String(threadId));
}

export interface ParsedChannel {
  botId: string;
  chatId: number;
  kind: "dm" | "group";
  threadId?: number;
}

/** Inverse of dmChannel / groupChannel; undefined for anything else. */
export function parseChannel(channel: string): ParsedChannel | undefined {
  const p = channel.split(":");
  if (p[0] !== PLATFORM || !p[1] || !/^\d+$/.test(p[1])) return undefined;
  const chatId = parseIntStrict(p[3]);
  if (chatId === undefined) return undefined;
  if (p.length === 4 && p[2] === "dm") return { botId: p[1], chatId, kind: "dm" };
  if (p.length === 4 && p[2] === "group") return { botId: p[1], chatId, kind: "group" };
  if (p.length === 6 && p[2] === "group" && p[4] === "topic") {
    const threadId = parseIntStrict(p[5]);
    return threadId === undefined ? undefined : { botId: p[1], chatId, kind: "group", threadId };
  }
  return undefined;
}

/** A group's external id (platform + this is unique): the chat id, e.g. `-1001234567890`. */
export function groupExternalId(chatId: number): string {
  return String(chatId);
}

/**
 * A forum topic's external id: `<chatId>:topic:<threadId>`. The chat id is
 * part of it because message_thread_id is only unique within one chat.
 */
export function threadExternalId(chatId: number, threadId: number): string {
  return `${chatId}:topic:${threadId}`;
}

export function parseThreadExternalId(id: string): { chatId: number; threadId: number } | undefined {
  const m = /^(-?\d+):topic:(\d+)$/.exec(id);
  if (!m) return undefined;
  const chatId = parseIntStrict(m[1]);
  const threadId = parseIntStrict(m[2]);
  return chatId === undefined || threadId === undefined ? undefined : { chatId, threadId };
}

/**
 * The inbound dedupe key. update_id is not used: it differs between polling
 * and a webhook, and Telegram may renumber after a long outage; the
 * (chat, message) pair names the message itself.
 */
export function eventIdOf(chatId: number, messageId: number): string {
  return `${chatId}:${messageId}`;
}

export function parseEventId(id: string): { chatId: number; messageId: number } | undefined {
  const m = /^(-?\d+):(\d+)$/.exec(id);
  if (!m) return undefined;
  const chatId = parseIntStrict(m[1]);
  const messageId = parseIntStrict(m[2]);
  return chatId === undefined || messageId === undefined ? undefined : { chatId, messageId };
}

/**
 * The kind of conversation a message belongs to. A forum topic is a thread
 * only when Telegram says so (is_topic_message): in a plain supergroup,
 * message_thread_id marks a reply chain, which stays part of the group. The
 * General topic carries no thread id and is the group itself. Channels are
 * not conversations (undefined).
 */
export function chatKindOf(chatType: unknown, isTopicMessage?: unknown, messageThreadId?: unknown): ChatKind | undefined {
  switch (chatType) {
    case "private":
      return "private";
    case "group":
      return "group";
    case "supergroup":
      return isTopicMessage === true && isTelegramId(messageThreadId) && messageThreadId > 0 ? "thread" : "group";
    default:
      return undefined;
  }
}

/** What a reply address means to the Bot API. */
export interface TelegramTarget {
  chat_id: number;
  message_thread_id?: number;
  reply_to_message_id?: number;
}

/** Builds the reply address for a message in a chat (and topic). */
export function encodeReplyAddress(botId: string, t: TelegramTarget): ReplyAddress & { platform: typeof PLATFORM } {
  const a: ReplyAddress & { platform: typeof PLATFORM } = { platform: PLATFORM, botId, chatId: String(t.chat_id) };
  if (t.message_thread_id !== undefined) a.threadId = String(t.message_thread_id);
  if (t.reply_to_message_id !== undefined) a.replyToMessageId = String(t.reply_to_message_id);
  return a;
}

/**
 * Inverse of encodeReplyAddress. Returns an explanation instead of throwing,
 * so the sink can turn it into its own error type.
 */
export function decodeReplyAddress(a: ReplyAddress): TelegramTarget | { error: string } {
  if (a.platform !== PLATFORM) return { error: `reply address is for platform "${a.platform}", not telegram: route it to that platform's adapter` };
  const chat_id = parseIntStrict(a.chatId);
  if (chat_id === undefined) return { error: `reply address chatId "${a.chatId}" is not a Telegram chat id (an integer such as -1001234567890)` };
  const t: TelegramTarget = { chat_id };
  if (a.threadId !== undefined) {
    const thread = parseIntStrict(a.threadId);
    if (thread === undefined || thread <= 0)
      return { error: `reply address threadId "${a.threadId}" is not a message_thread_id (a positive integer, not the "<chat>:topic:<id>" external id)` };
    t.message_thread_id = thread;
  }
  if (a.replyToMessageId !== undefined) {
    const reply = parseIntStrict(a.replyToMessageId);
    if (reply === undefined || reply <= 0) return { error: `reply address replyToMessageId "${a.replyToMessageId}" is not a Telegram message id` };
    t.reply_to_message_id = reply;
  }
  return t;
}

/** A Telegram message id from the string the gateway stores. */
export function parseMessageId(id: string): number | undefined {
  const n = parseIntStrict(id);
  return n !== undefined && n > 0 ? n : undefined;
}

function parseIntStrict(s: string | undefined): number | undefined {
  if (s === undefined || !/^-?\d{1,16}$/.test(s)) return undefined;
  const n = Number(s);
  // "-0" and numbers past 2^53 would not print back to the same string.
  return Number.isSafeInteger(n) && String(n) === s ? n : undefined;
}
