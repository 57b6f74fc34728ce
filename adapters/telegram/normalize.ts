import { createHash } from "node:crypto";
/**
 * Telegram Update -> InboundEnvelope. A pure function of the update and the
 * bot's identity. It must never throw: an update that crashed the adapter
 * would be redelivered forever (polling) or retried by Telegram (webhook),
 * blocking every later message. So the input is treated as unknown JSON and
 * every field is checked before use; the fuzz test proves the checks
 * suffice, and the try/catch in normalizeUpdate is only a last guard.
 */
import { forwardedText } from "../shared/forwarded.js";
import type { Attachment, InboundEnvelope } from "../types.js";
import { PLATFORM, chatKindOf, dmChannel, encodeReplyAddress, eventIdOf, groupChannel, groupExternalId, isTelegramId, threadExternalId } from "./ids.js";

export interface BotIdentity {
  /** The bot's numeric id, as a string. */
  id: string;
  /** Without the leading @. */
  username?: string;
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const obj = (v: unknown): Obj | undefined => (isObj(v) ? v : undefined);
const nonNegInt = (v: unknown): number | undefined => (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : undefined);

/**
 * Returns the envelope for an update that starts a turn, or undefined for
 * everything else. Never throws: an update the code below could not read is
 * passed to `onError` (the adapter logs and counts it) and is not a turn.
 */
export function normalizeUpdate(update: unknown, bot: BotIdentity, onError?: (err: unknown) => void): InboundEnvelope | undefined {
  try {
    return normalizeUpdateUnguarded(update, bot);
  } catch (err) {
    onError?.(err);
    return undefined;
  }
}

/**
 * The same without the guard. Exported so the fuzz test can prove that the
 * guard never has anything to catch.
 */
export function normalizeUpdateUnguarded(update: unknown, bot: BotIdentity): InboundEnvelope | undefined {
  if (!isObj(update)) return undefined;
  // Only `message` starts a turn. edited_message is a change of an earlier
  // message (applied to the transcript, never answered twice); channel_post
  // has no sender to bind; callback queries, member updates and types added
  // to the Bot API later are not conversation turns.
  const edited = update.message === undefined ? obj(update.edited_message) : undefined;
  const msg = obj(update.message) ?? edited;
  if (!msg) return undefined;

  const chat = obj(msg.chat);
  const messageId = num(msg.message_id);
  const date = num(msg.date);
  if (!chat || !isTelegramId(chat.id) || !isTelegramId(messageId) || messageId <= 0 || date === undefined) return undefined;
  const chatId = chat.id;
  const threadIdRaw = msg.message_thread_id;
  const kind = chatKindOf(chat.type, msg.is_topic_message, threadIdRaw);
  if (!kind) return undefined;
  const threadId = kind === "thread" && isTelegramId(threadIdRaw) ? threadIdRaw : undefined;

  const sender = senderOf(msg);
  if (!sender || sender.id === bot.id) return undefined;

  const hasText = typeof msg.text === "string";
  const typed = hasText ? (msg.text as string) : (str(msg.caption) ?? "");
  // A forward is someone else's words: content for the agent, never the forwarder's command or mention.
  const forward = forwardOriginOf(msg);
  const text = forward === undefined ? typed : forwardedText([{ from: forward, text: typed }]);
  const entities = arr(hasText ? msg.entities : msg.caption_entities);
  const attachments = attachmentsOf(msg);
  // Service messages (joins, pins, topic created...) carry neither.
  if (typed === "" && attachments.length === 0) return undefined;

  const occurredAt = new Date(date * 1000);
  const env: InboundEnvelope = {
    platform: PLATFORM,
    botId: bot.id,
    chatKind: kind,
    chatId: groupExternalId(chatId),
    senderId: sender.id,
    text,
    mentioned: forward === undefined && isAddressedToBot(msg, typed, entities, bot, threadId),
    eventId: eventIdOf(chatId, messageId),
    messageId: String(messageId),
    occurredAt: Number.isNaN(occurredAt.getTime()) ? new Date(0) : occurredAt,
    replyTo: encodeReplyAddress(bot.id, { chat_id: chatId, message_thread_id: threadId, reply_to_message_id: messageId }),
    channel: kind === "private" ? dmChannel(bot.id, chatId) : groupChannel(bot.id, chatId, threadId),
  };
  if (threadId !== undefined) env.threadId = threadExternalId(chatId, threadId);
  if (sender.name !== undefined) env.senderName = sender.name;
  if (sender.isBot) env.senderIsBot = true;
  if (attachments.length) env.attachments = attachments;
  const title = str(chat.title);
  if (title !== undefined && kind !== "private") env.chatTitle = title;
  if (edited) {
    // One event per edit: the same message edited twice is two changes, a redelivery of one is a duplicate.
    env.change = { kind: "edit", messageId: String(messageId) };
    env.eventId = `${eventIdOf(chatId, messageId)}:edit:${num(msg.edit_date) ?? date}:${createHash("sha256").update(text).digest("hex").slice(0, 12)}`;
  }
  return env;
}

/**
 * A basic group upgraded to a supergroup: Telegram posts migrate_to_chat_id
 * in the old chat and migrate_from_chat_id in the new one. Either gives the
 * pair of external chat ids (old, new). Never throws.
 */
export function chatMigrationOf(update: unknown): { from: string; to: string } | undefined {
  const msg = isObj(update) ? obj(update.message) : undefined;
  const chatId = obj(msg?.chat)?.id;
  if (!msg || !isTelegramId(chatId)) return undefined;
  const to = msg.migrate_to_chat_id;
  if (isTelegramId(to) && to !== chatId) return { from: groupExternalId(chatId), to: groupExternalId(to) };
  const from = msg.migrate_from_chat_id;
  if (isTelegramId(from) && from !== chatId) return { from: groupExternalId(from), to: groupExternalId(chatId) };
  return undefined;
}

/**
 * Who a forwarded message came from ("" when Telegram hides it), or undefined
 * when the message is not a forward: forward_origin (Bot API 7.0+), or the
 * older forward_from / forward_from_chat / forward_sender_name / forward_date.
 */
function forwardOriginOf(msg: Obj): string | undefined {
  const origin = obj(msg.forward_origin);
  if (origin) {
    const user = obj(origin.sender_user);
    const chat = obj(origin.sender_chat) ?? obj(origin.chat);
    return (
      (user && ([str(user.first_name), str(user.last_name)].filter((x) => x).join(" ") || str(user.username))) ||
      str(origin.sender_user_name) ||
      str(chat?.title) ||
      ""
    );
  }
  const from = obj(msg.forward_from);
  if (from) return [str(from.first_name), str(from.last_name)].filter((x) => x).join(" ") || str(from.username) || "";
  const fromChat = obj(msg.forward_from_chat);
  if (fromChat) return str(fromChat.title) ?? "";
  if (str(msg.forward_sender_name) !== undefined) return str(msg.forward_sender_name);
  return msg.forward_date !== undefined ? "" : undefined;
}

function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

interface Sender {
  id: string;
  name?: string;
  isBot: boolean;
}

function senderOf(msg: Obj): Sender | undefined {
  const senderChat = obj(msg.sender_chat);
  const from = obj(msg.from);
  // A message sent on behalf of a chat (anonymous admin, linked channel)
  // comes "from" a placeholder bot account; the chat is the real sender.
  if (senderChat && isTelegramId(senderChat.id)) {
    const s: Sender = { id: String(senderChat.id), isBot: false };
    const title = str(senderChat.title);
    if (title) s.name = title;
    return s;
  }
  if (!from || !isTelegramId(from.id)) return undefined;
  const s: Sender = { id: String(from.id), isBot: from.is_bot === true };
  const name = [str(from.first_name), str(from.last_name)].filter((x) => x).join(" ") || str(from.username);
  if (name) s.name = name;
  return s;
}

function fileBase(kind: Attachment["kind"], o: Obj | undefined): Attachment | undefined {
  const fileId = str(o?.file_id);
  if (!o || !fileId) return undefined;
  const a: Attachment = { kind, fileId };
  const name = str(o.file_name);
  const mime = str(o.mime_type);
  const size = nonNegInt(o.file_size);
  const width = nonNegInt(o.width);
  const height = nonNegInt(o.height);
  const duration = nonNegInt(o.duration);
  if (name !== undefined) a.name = name;
  if (mime !== undefined) a.mimeType = mime;
  if (size !== undefined) a.size = size;
  if (width !== undefined) a.width = width;
  if (height !== undefined) a.height = height;
  if (duration !== undefined) a.durationSec = duration;
  return a;
}

function attachmentsOf(msg: Obj): Attachment[] {
  const out: Attachment[] = [];
  // Telegram sends every resolution of a photo; the agent wants the largest.
  let best: { o: Obj; area: number } | undefined;
  for (const p of arr(msg.photo)) {
    if (!isObj(p) || !str(p.file_id)) continue;
    const area = (nonNegInt(p.width) ?? 0) * (nonNegInt(p.height) ?? 0);
    if (!best || area >= best.area) best = { o: p, area };
  }
  const photo = fileBase("photo", best?.o);
  if (photo) out.push(photo);
  // An animation also arrives as `document`; taking document covers both.
  const kinds: [string, Attachment["kind"]][] = [
    ["document", "document"],
    ["voice", "voice"],
    ["audio", "audio"],
    ["video", "video"],
    ["video_note", "video"],
    ["sticker", "sticker"],
  ];
  for (const [field, kind] of kinds) {
    const a = fileBase(kind, obj(msg[field]));
    if (!a) continue;
    if (kind === "sticker") {
      const emoji = str(obj(msg[field])?.emoji);
      if (emoji && a.name === undefined) a.name = emoji;
    }
    out.push(a);
  }
  return out;
}

function entityText(text: string, e: Obj): string | undefined {
  const offset = nonNegInt(e.offset);
  const length = nonNegInt(e.length);
  if (offset === undefined || length === undefined || offset + length > text.length) return undefined;
  // Entity offsets are UTF-16 code units, which is what JS strings index.
  return text.slice(offset, offset + length);
}

/**
 * mentioned: an @username mention or text_mention of the bot, a command
 * addressed to it (/cmd@bot), or a reply to one of its messages. A command
 * addressed to another bot (/cmd@other) is never ours, whatever else the
 * message does.
 */
function isAddressedToBot(msg: Obj, text: string, entities: unknown[], bot: BotIdentity, threadId: number | undefined): boolean {
  const handle = bot.username ? `@${bot.username.toLowerCase()}` : undefined;
  let mentioned = false;
  for (const raw of entities) {
    if (!isObj(raw)) continue;
    const type = raw.type;
    if (type === "text_mention") {
      const u = obj(raw.user);
      if (u && isTelegramId(u.id) && String(u.id) === bot.id) mentioned = true;
      continue;
    }
    if (type !== "mention" && type !== "bot_command") continue;
    const t = entityText(text, raw)?.toLowerCase();
    if (t === undefined) continue;
    if (type === "mention" && handle && t === handle) mentioned = true;
    if (type === "bot_command") {
      const at = t.indexOf("@");
      if (at < 0) continue;
      if (handle && t.slice(at) === handle) mentioned = true;
      else if (raw.offset === 0) return false;
    }
  }
  if (mentioned) return true;
  const reply = obj(msg.reply_to_message);
  if (!reply) return false;
  // In a forum topic every message "replies" to the topic's first message;
  // that is not a reply to the bot even if the bot opened the topic.
  if (threadId !== undefined && reply.message_id === threadId) return false;
  const from = obj(reply.from);
  return !!from && isTelegramId(from.id) && String(from.id) === bot.id;
}

export { isObj as isJsonObject };
