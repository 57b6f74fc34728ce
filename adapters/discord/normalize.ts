/**
 * Raw gateway MESSAGE_CREATE data -> InboundEnvelope. Pure: the adapter looks
 * the channel up (cache or REST) and passes what it found, so this module can
 * be fuzzed with arbitrary payloads. It never throws; anything it cannot make
 * sense of is undefined (not a conversation message).
 *
 * Raw data rather than discord.js Message objects: the raw event arrives for
 * every message, including ones in channels discord.js has not cached, and it
 * is what is fuzzed.
 */
import { forwardedText } from "../shared/forwarded.js";
import type { Attachment, InboundEnvelope } from "../types.js";
import { chatKindOf, dmChannel, encodeReplyAddress, groupChannel, isSnowflake, PLATFORM, snowflakeTime } from "./ids.js";

export interface DiscordBotIdentity {
  id: string;
  /** Answer messages from other bots (default false: bot loops). */
  allowBots?: boolean;
  /** Role ids whose mention counts as addressing the bot (e.g. the bot's managed role). */
  mentionRoles?: readonly string[];
}

/** What the adapter knows about the message's channel. */
export interface ChannelInfo {
  type?: number;
  /** For a thread: the channel it hangs off. */
  parentId?: string;
  name?: string;
}

/** DEFAULT and REPLY; joins, pins, thread-created notices and the like are not turns. */
const CONVERSATION_TYPES = new Set([0, 19]);
const VOICE_MESSAGE_FLAG = 1 << 13;

type Obj = Record<string, unknown>;

function obj(v: unknown): Obj | undefined {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
}
function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}
function num(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

export function normalizeMessage(raw: unknown, bot: DiscordBotIdentity, channel?: ChannelInfo, onError?: (err: unknown) => void): InboundEnvelope | undefined {
  try {
    return normalizeUnsafe(raw, bot, channel);
  } catch (err) {
    // Defence in depth: a payload shape nobody foresaw must not stop the shard's event loop; the adapter logs and counts it.
    onError?.(err);
    return undefined;
  }
}

function normalizeUnsafe(raw: unknown, bot: DiscordBotIdentity, channel: ChannelInfo | undefined): InboundEnvelope | undefined {
  const m = obj(raw);
  if (!m) return undefined;
  const id = m.id;
  const channelId = m.channel_id;
  const author = obj(m.author);
  if (!isSnowflake(id) || !isSnowflake(channelId) || !author || !isSnowflake(author.id)) return undefined;
  const type = m.type ?? 0;
  if (typeof type !== "number" || !CONVERSATION_TYPES.has(type)) return undefined;
  const senderId = author.id;
  if (senderId === bot.id) return undefined;
  const isBot = author.bot === true || author.system === true || m.webhook_id !== undefined;
  if (isBot && !bot.allowBots) return undefined;

  const guildId = m.guild_id;
  if (guildId !== undefined && !isSnowflake(guildId)) return undefined;
  const channelType = channel?.type ?? num(m.channel_type);
  const parentId = channel?.parentId;
  const chatKind = chatKindOf({ guildId, channelType, parentId });
  if (!chatKind) return undefined;

  const content = str(m.content) ?? "";
  const mentioned = isMentioned(m, content, bot);
  // A forward (message_reference type 1) carries the forwarded message in message_snapshots: content, never a command.
  const snapshots = forwardedSnapshots(m);
  const own = stripBotMention(content, bot).trim();
  const text = snapshots.length
    ? forwardedText(
        snapshots.map((s) => ({ text: str(s.content) ?? "" })),
        own,
      )
    : own;
  const attachments = [m, ...snapshots].flatMap((x) => attachmentsOf(x.attachments, num(x.flags) ?? 0));
  if (!text && attachments.length === 0) return undefined;

  const member = obj(m.member);
  const senderName = str(member?.nick) || str(author.global_name) || str(author.username) || undefined;
  const occurredAt = dateOf(m.timestamp) ?? snowflakeTime(id) ?? new Date(0);

  const env: InboundEnvelope = {
    platform: PLATFORM,
    botId: bot.id,
    chatKind,
    chatId: channelId,
    senderId,
    text,
    mentioned,
    eventId: id,
    messageId: id,
    occurredAt,
    replyTo: encodeReplyAddress(bot.id, { channelId, replyToMessageId: id }),
    channel: dmChannel(bot.id, channelId),
  };
  if (chatKind === "thread" && parentId) {
    env.chatId = parentId;
    env.threadId = channelId;
    env.replyTo = encodeReplyAddress(bot.id, { channelId, threadId: channelId, replyToMessageId: id });
    env.channel = groupChannel(bot.id, parentId, channelId);
  } else if (chatKind === "group") {
    env.channel = groupChannel(bot.id, channelId);
  }
  // The guild (server) is the chat's workspace, as a Slack team is: AGENTS_CONFIG routes by it, its budgets and /metrics count by it.
  if (guildId !== undefined) env.workspace = guildId;
  if (senderName) env.senderName = senderName;
  // A bot's message gets here only with allowBots (DISCORD_ALLOW_BOTS): a sender as any other, since the
  // gateway ignores whatever is marked senderIsBot.
  if (attachments.length) env.attachments = attachments;
  if (chatKind !== "private" && channel?.name) env.chatTitle = channel.name;
  return env;
}

const FORWARD_REFERENCE = 1;

function forwardedSnapshots(m: Obj): Obj[] {
  if (obj(m.message_reference)?.type !== FORWARD_REFERENCE || !Array.isArray(m.message_snapshots)) return [];
  return m.message_snapshots.map((s) => obj(obj(s)?.message)).filter((x): x is Obj => x !== undefined);
}

/**
 * MESSAGE_UPDATE (the author edited the text) and MESSAGE_DELETE: a change of
 * the earlier message, keyed to the chat and message it was created in. An
 * update without edited_timestamp (an embed unfurl) or without its author
 * and content is no edit. A delete carries only ids: it is normalized as a
 * message of no one, and its text is empty.
 */
export function normalizeChange(kind: "edit" | "delete", raw: unknown, bot: DiscordBotIdentity, channel?: ChannelInfo): InboundEnvelope | undefined {
  try {
    const m = obj(raw);
    if (!m || !isSnowflake(m.id)) return undefined;
    if (kind === "edit") {
      const editedAt = str(m.edited_timestamp);
      if (!editedAt) return undefined;
      const env = normalizeUnsafe(m, bot, channel);
      if (!env) return undefined;
      env.change = { kind, messageId: env.messageId! };
      env.eventId = `${env.eventId}:edit:${editedAt}`;
      return env;
    }
    const env = normalizeUnsafe(
      { id: m.id, channel_id: m.channel_id, guild_id: m.guild_id, type: 0, content: "(deleted)", author: { id: NOBODY } },
      bot,
      channel,
    );
    if (!env) return undefined;
    env.change = { kind, messageId: env.messageId! };
    env.eventId = `${env.eventId}:delete`;
    env.senderId = "";
    env.text = "";
    env.mentioned = false;
    return env;
  } catch {
    return undefined;
  }
}

/** The author of a deleted message, which MESSAGE_DELETE does not name. */
const NOBODY = "1";

/**
 * A user mention of the bot, a reply to one of its messages, or a configured
 * role. @everyone/@here and other roles never count: they would make the bot
 * answer every announcement.
 */
function isMentioned(m: Obj, content: string, bot: DiscordBotIdentity): boolean {
  if (content.includes(`<@${bot.id}>`) || content.includes(`<@!${bot.id}>`)) return true;
  const mentions = m.mentions;
  if (Array.isArray(mentions) && mentions.some((u) => obj(u)?.id === bot.id)) return true;
  const ref = obj(m.referenced_message);
  if (ref && obj(ref.author)?.id === bot.id) return true;
  const roles = m.mention_roles;
  if (bot.mentionRoles?.length && Array.isArray(roles) && roles.some((r) => typeof r === "string" && bot.mentionRoles!.includes(r))) return true;
  return false;
}

/** Removes `<@bot>`, `<@!bot>` and configured role mentions: they address the bot, they are not the question. */
export function stripBotMention(content: string, bot: Pick<DiscordBotIdentity, "id" | "mentionRoles">): string {
  let s = content.split(`<@${bot.id}>`).join(" ").split(`<@!${bot.id}>`).join(" ");
  for (const r of bot.mentionRoles ?? []) s = s.split(`<@&${r}>`).join(" ");
  return s === content ? s : s.replace(/[ \t]{2,}/g, " ");
}

function attachmentsOf(v: unknown, messageFlags: number): Attachment[] {
  if (!Array.isArray(v)) return [];
  const out: Attachment[] = [];
  for (const item of v) {
    const a = obj(item);
    const url = str(a?.url) || str(a?.proxy_url);
    if (!a || !url) continue;
    const mime = str(a.content_type);
    const att: Attachment = { kind: kindOf(mime, a, messageFlags), fileId: url };
    const name = str(a.filename);
    if (name) att.name = name;
    if (mime) att.mimeType = mime;
    const size = num(a.size);
    if (size !== undefined && size >= 0) att.size = size;
    const width = num(a.width);
    const height = num(a.height);
    if (width !== undefined) att.width = width;
    if (height !== undefined) att.height = height;
    const dur = num(a.duration_secs);
    if (dur !== undefined) att.durationSec = dur;
    out.push(att);
  }
  return out;
}

function kindOf(mime: string | undefined, a: Obj, flags: number): Attachment["kind"] {
  if ((flags & VOICE_MESSAGE_FLAG) !== 0 || a.waveform !== undefined) return "voice";
  if (!mime) return "document";
  if (mime.startsWith("image/")) return "photo";
  if (mime.startsWith("audio/")) return "audio";
  if (mime.startsWith("video/")) return "video";
  return "document";
}

function dateOf(v: unknown): Date | undefined {
  if (typeof v !== "string") return undefined;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? undefined : d;
}
