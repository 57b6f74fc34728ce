/**
 * Discord identifier rules, in one place (DESIGN.md: "each platform fact
 * lives once"). Everything that turns a Discord channel, thread, message or
 * bot id into a Switchboard string, or back, goes through here, and
 * test/adapters/discord/ids.test.ts pins the formats: changing one of them
 * orphans every durable binding built from it.
 *
 * Snowflakes are globally unique across Discord, so a guild channel's id is
 * its group id on its own; no guild id is needed to make it unique.
 */
import { createHash } from "node:crypto";
import type { ChatKind, ReplyAddress } from "../types.js";
import { channelOf } from "../../src/session/channel.js";

export const PLATFORM = "discord" as const;

const MAX_SNOWFLAKE = (1n << 64n) - 1n;
/** Discord's epoch (2015-01-01T00:00:00Z) that snowflake timestamps count from. */
export const DISCORD_EPOCH_MS = 1_420_070_400_000;

/** A snowflake as Discord sends it: a decimal string of an unsigned 64-bit integer, no leading zero. */
export function isSnowflake(v: unknown): v is string {
  if (typeof v !== "string" || !/^[1-9]\d{0,19}$/.test(v)) return false;
  return BigInt(v) <= MAX_SNOWFLAKE;
}

/** When the snowflake was minted, or undefined for anything that is not one. */
export function snowflakeTime(id: unknown): Date | undefined {
  if (!isSnowflake(id)) return undefined;
  const ms = Number(BigInt(id) >> 22n) + DISCORD_EPOCH_MS;
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

/** The durable channel of a DM: `discord:<botId>:dm:<channelId>`. */
export function dmChannel(botId: string, channelId: string): string {
  return channelOf(PLATFORM, botId, "dm", channelId);
}

/**
 * The informational channel of a guild channel or thread. It has no `dm`
 * segment, so isPrivateChannel() says false; groups bind on the group id.
 */
export function groupChannel(botId: string, channelId: string, threadId?: string): string {
  return threadId === undefined ? channelOf(PLATFORM, botId, "group", channelId) : channelOf(PLATFORM, botId, "group", channelId, "thread", threadId);
}

export interface ParsedChannel {
  botId: string;
  kind: "dm" | "group";
  channelId: string;
  threadId?: string;
}

/** Inverse of dmChannel / groupChannel; undefined for anything else. */
export function parseChannel(channel: string): ParsedChannel | undefined {
  const p = channel.split(":");
  if (p[0] !== PLATFORM || !isSnowflake(p[1]) || !isSnowflake(p[3])) return undefined;
  if (p.length === 4 && (p[2] === "dm" || p[2] === "group")) return { botId: p[1], kind: p[2], channelId: p[3] };
  if (p.length === 6 && p[2] === "group" && p[4] === "thread" && isSnowflake(p[5])) return { botId: p[1], kind: "group", channelId: p[3], threadId: p[5] };
  return undefined;
}

/** A guild channel's group external id: the channel id itself. */
export function groupExternalId(channelId: string): string {
  return channelId;
}

/**
 * A thread's external id, `<parentId>:thread:<threadId>`: the same string
 * src/gateway/inbound/conversation.ts builds from an envelope's chatId and threadId.
 */
export function threadExternalId(parentId: string, threadId: string): string {
  return `${parentId}:thread:${threadId}`;
}

export function parseThreadExternalId(id: string): { parentId: string; threadId: string } | undefined {
  const m = /^(\d+):thread:(\d+)$/.exec(id);
  return m && isSnowflake(m[1]) && isSnowflake(m[2]) ? { parentId: m[1], threadId: m[2] } : undefined;
}

/** Channel types (discord-api-types ChannelType) that are conversations we answer in. */
const THREAD_TYPES = new Set([10, 11, 12]);
const GUILD_TEXT_TYPES = new Set([0, 5, 2, 13, 15, 16]);

export function isThreadType(type: unknown): boolean {
  return typeof type === "number" && THREAD_TYPES.has(type);
}

/**
 * The kind of conversation a message belongs to. No guild id means a DM
 * (bots are never in group DMs). A thread needs its parent, because the
 * thread's group hangs off the parent channel's.
 */
export function chatKindOf(o: { guildId?: unknown; channelType?: unknown; parentId?: unknown }): ChatKind | undefined {
  if (o.guildId === undefined || o.guildId === null) return o.channelType === undefined || o.channelType === 1 ? "private" : undefined;
  if (isThreadType(o.channelType)) return isSnowflake(o.parentId) ? "thread" : "group";
  if (o.channelType === undefined || (typeof o.channelType === "number" && GUILD_TEXT_TYPES.has(o.channelType))) return "group";
  return undefined;
}

/** Where a reply goes, in Discord's terms. */
export interface DiscordTarget {
  /** The channel (or thread channel) the message is posted in. */
  channelId: string;
  replyToMessageId?: string;
  /** Set for a slash command: the reply edits the deferred original response. */
  interaction?: { applicationId: string; token: string };
}

/**
 * Builds the reply address. For a thread, chatId is the thread's own channel
 * (where the message is posted) and threadId repeats it.
 */
export function encodeReplyAddress(botId: string, t: DiscordTarget & { threadId?: string }): ReplyAddress & { platform: typeof PLATFORM } {
  const a: ReplyAddress & { platform: typeof PLATFORM } = { platform: PLATFORM, botId, chatId: t.channelId };
  if (t.threadId !== undefined) a.threadId = t.threadId;
  if (t.replyToMessageId !== undefined) a.replyToMessageId = t.replyToMessageId;
  if (t.interaction) a.extra = { interactionToken: t.interaction.token, applicationId: t.interaction.applicationId };
  return a;
}

/** Inverse of encodeReplyAddress. Returns an explanation instead of throwing. */
export function decodeReplyAddress(a: ReplyAddress): DiscordTarget | { error: string } {
  if (a.platform !== PLATFORM) return { error: `reply address is for platform "${a.platform}", not discord: route it to that platform's adapter` };
  // A thread id wins, so an address built as (parent chatId, threadId) still posts into the thread.
  const channelId = a.threadId ?? a.chatId;
  if (!isSnowflake(channelId)) return { error: `reply address channel "${channelId}" is not a Discord snowflake (a decimal id such as 1234567890123456789)` };
  const t: DiscordTarget = { channelId };
  if (a.replyToMessageId !== undefined) {
    if (!isSnowflake(a.replyToMessageId)) return { error: `reply address replyToMessageId "${a.replyToMessageId}" is not a Discord message id` };
    t.replyToMessageId = a.replyToMessageId;
  }
  const token = a.extra?.interactionToken;
  const applicationId = a.extra?.applicationId;
  if (token !== undefined || applicationId !== undefined) {
    if (!token || !/^[A-Za-z0-9._-]+$/.test(token) || !isSnowflake(applicationId))
      return { error: "reply address extra.interactionToken/applicationId are malformed: both come from the INTERACTION_CREATE the reply answers" };
    t.interaction = { applicationId, token };
  }
  return t;
}

/** Discord's limit on a message nonce. */
export const NONCE_MAX = 25;

/**
 * The message nonce for an idempotency key: sha256 -> base64url, cut to 25
 * characters (Discord's maximum). Stable for one key, so with enforce_nonce a
 * resend after a crash is dropped by Discord instead of shown twice.
 */
export function nonceOf(idempotencyKey: string): string {
  return createHash("sha256").update(idempotencyKey).digest("base64url").slice(0, NONCE_MAX);
}
