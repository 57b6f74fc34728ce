/**
 * Events API event -> InboundEnvelope. Pure and total: whatever Slack (or an
 * attacker who got past the signature check, or a future Slack) sends, it
 * returns an envelope or undefined and never throws; the fuzz test holds it
 * to that.
 */
import { forwardedText, type Forwarded } from "../shared/forwarded.js";
import type { Attachment, ChatKind, InboundEnvelope } from "../types.js";
import { PLATFORM, chatExternalId, chatKindOf, dmChannel, encodeReplyAddress, groupChannel, isSlackId, isSlackTs, messageEventId } from "./ids.js";

export interface SlackIdentity {
  teamId: string;
  /** The bot's user id (U…): the adapter's botId, and what `<@…>` mentions name. */
  botUserId: string;
  /** The bot's bot id (B…): what its own posts carry as bot_id. */
  botId?: string;
  /** The app's id (A…) from auth.test: events for another api_app_id are dropped. */
  appId?: string;
  /** The workspace's Enterprise Grid org, when the installation is in one: replies find its token by it. */
  enterpriseId?: string;
  /** The user who installed the app into this workspace (installs by OAuth): its admin by default. */
  installerUserId?: string;
}

/** A reply address's routing facts beyond the channel: the workspace, and its org when it has one. */
export function workspaceOf(me: SlackIdentity): { teamId: string; enterpriseId?: string } {
  return me.enterpriseId ? { teamId: me.teamId, enterpriseId: me.enterpriseId } : { teamId: me.teamId };
}

export interface NormalizeOptions {
  /** The message's thread (thread_ts) is one the bot was summoned into, so it is addressed to the bot. */
  knownThread?: boolean;
  /** Told when the event could not be read (the adapter logs and counts it); it is not a turn. */
  onError?: (err: unknown) => void;
}

/** Subtypes that are still a person talking; every other subtype (joins, edits, deletes, bots) is not a turn. */
const TURN_SUBTYPES = new Set(["file_share", "thread_broadcast"]);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** The event inside an event_callback body, or the body itself when it is already an event. */
export function eventOf(body: unknown): Obj | undefined {
  if (!isObj(body)) return undefined;
  return isObj(body.event) ? body.event : body;
}

/** The thread a message belongs to, when it is a reply in one (thread_ts differs from ts). */
export function replyThreadTs(event: Obj): string | undefined {
  const threadTs = event.thread_ts;
  return isSlackTs(threadTs) && threadTs !== event.ts ? threadTs : undefined;
}

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Slack escapes &, < and > in message text; the agent should see what the user typed. */
function unescapeSlack(s: string): string {
  return s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

function attachmentsOf(files: unknown): Attachment[] {
  if (!Array.isArray(files)) return [];
  const out: Attachment[] = [];
  for (const f of files) {
    if (!isObj(f) || typeof f.id !== "string") continue;
    const mime = str(f.mimetype);
    // A clip recorded in Slack's composer (subtype slack_audio) is its voice note, whatever container it comes in.
    const a: Attachment = { kind: f.subtype === "slack_audio" ? "voice" : kindOfMime(mime), fileId: f.id };
    const name = str(f.name);
    if (name !== undefined) a.name = name;
    if (mime !== undefined) a.mimeType = mime;
    if (typeof f.size === "number" && Number.isFinite(f.size)) a.size = f.size;
    const url = str(f.url_private_download) ?? str(f.url_private);
    if (url !== undefined) a.url = url;
    out.push(a);
  }
  return out;
}

/** Messages shared into this one (Slack's "forward"): attachments marked is_share or is_msg_unfurl. */
function sharedMessagesOf(attachments: unknown): Forwarded[] {
  if (!Array.isArray(attachments)) return [];
  const out: Forwarded[] = [];
  for (const a of attachments) {
    if (!isObj(a) || (a.is_share !== true && a.is_msg_unfurl !== true)) continue;
    const text = str(a.text) ?? str(a.fallback) ?? "";
    const from = str(a.author_name) || str(a.author_subname);
    out.push({ text: unescapeSlack(text), ...(from ? { from } : {}) });
  }
  return out;
}

function kindOfMime(mime: string | undefined): Attachment["kind"] {
  if (!mime) return "document";
  if (mime.startsWith("image/")) return "photo";
  if (mime.startsWith("audio/")) return "audio";
  if (mime.startsWith("video/")) return "video";
  return "document";
}

function senderNameOf(event: Obj): string | undefined {
  const p = event.user_profile;
  if (!isObj(p)) return undefined;
  const name = str(p.display_name) || str(p.real_name) || str(p.name);
  return name || undefined;
}

/**
 * Normalizes a `message` or `app_mention` event (or the event_callback body
 * around it). Both normalize to the same eventId (`<channel>:<ts>`), so the
 * pair Slack sends for one @-mention is answered once.
 *
 * Returns undefined for what is not a person's turn: the bot's own posts,
 * bot_message and other subtypes (edits arrive as message_changed and must
 * not start a second turn), hidden events, and malformed input.
 */
export function normalizeEvent(body: unknown, me: SlackIdentity, opts: NormalizeOptions = {}): InboundEnvelope | undefined {
  try {
    return normalizeUnsafe(body, me, opts);
  } catch (err) {
    opts.onError?.(err);
    // Belt and braces: the code below is written not to throw, but a getter on
    // a hostile object could; an event we cannot read is not a turn.
    return undefined;
  }
}

function normalizeUnsafe(body: unknown, me: SlackIdentity, opts: NormalizeOptions): InboundEnvelope | undefined {
  const event = eventOf(body);
  if (!event) return undefined;
  const type = event.type;
  if (type !== "message" && type !== "app_mention") return undefined;
  const subtype = event.subtype;
  if (type === "message" && (subtype === "message_changed" || subtype === "message_deleted")) return changeOf(body, event, subtype, me, opts);
  if (subtype !== undefined && !(typeof subtype === "string" && TURN_SUBTYPES.has(subtype))) return undefined;
  if (event.hidden === true) return undefined;

  const channelId = event.channel;
  const ts = event.ts;
  const user = event.user;
  if (!isSlackId(channelId) || !isSlackTs(ts) || !isSlackId(user)) return undefined;
  const botIdOfPost = str(event.bot_id);
  if (user === me.botUserId || (me.botId !== undefined && botIdOfPost === me.botId)) return undefined;

  // Conversations are keyed on the workspace the app is installed in (the bot token's, from
  // auth.test), never the sender's: in a Slack Connect channel, external members' events carry
  // their own team (event.team, user_team, source_team), and keying on it split one thread
  // into a session per organisation.
  const teamId = me.teamId;

  const threadTs = replyThreadTs(event);
  const rawText = str(event.text) ?? "";
  const mentionedInText = rawText.includes(`<@${me.botUserId}>`) || rawText.includes(`<@${me.botUserId}|`);
  const typed = withoutMentionOf(rawText, me.botUserId);
  // A shared (forwarded) message arrives as an attachment: content, never a command, even with a comment.
  const shared = sharedMessagesOf(event.attachments);
  const text = shared.length ? forwardedText(shared, typed) : typed;
  const attachments = attachmentsOf(event.files);
  if (text === "" && attachments.length === 0 && !mentionedInText && type !== "app_mention") return undefined;

  const kind = chatKindOf(event.channel_type, channelId, threadTs);
  if (kind === undefined) return undefined;
  const mentioned = type === "app_mention" || mentionedInText;

  const { chatKind, threadId, replyThread, addressed } = conversationOf(kind, ts, threadTs, mentioned, opts.knownThread === true);

  const occurredMs = Math.floor(Number(ts) * 1000);
  const env: InboundEnvelope = {
    platform: PLATFORM,
    botId: me.botUserId,
    chatKind,
    chatId: chatExternalId(teamId, channelId),
    senderId: user,
    text,
    mentioned: addressed,
    eventId: messageEventId(channelId, ts),
    messageId: ts,
    occurredAt: new Date(Number.isFinite(occurredMs) ? occurredMs : 0),
    replyTo: encodeReplyAddress(me.botUserId, { channel: channelId, ...workspaceOf(me), ...(replyThread !== undefined ? { thread_ts: replyThread } : {}) }),
    channel: chatKind === "private" ? dmChannel(teamId, me.botUserId, channelId) : groupChannel(teamId, me.botUserId, channelId, threadId),
  };
  if (threadId !== undefined) env.threadId = threadId;
  if (attachments.length > 0) env.attachments = attachments;
  const senderName = senderNameOf(event);
  if (senderName !== undefined) env.senderName = senderName;
  // Another app posting as a user (bot_id without the bot_message subtype): the gateway's policy drops it.
  if (botIdOfPost !== undefined) env.senderIsBot = true;
  if (me.installerUserId !== undefined && user === me.installerUserId) env.senderAdministers = true;
  env.workspace = teamId;
  return env;
}

/** The text a person typed, without the bot's mention (`<@U…>` or `<@U…|name>`), unescaped. */
function withoutMentionOf(rawText: string, botUserId: string): string {
  return unescapeSlack(
    rawText
      .split(`<@${botUserId}>`)
      .join(" ")
      .replace(new RegExp(`<@${escapeRe(botUserId)}\\|[^>]*>`, "g"), " "),
  )
    .replace(/[ \t]{2,}/g, " ")
    .trim();
}

interface Conversation {
  chatKind: ChatKind;
  threadId: string | undefined;
  replyThread: string | undefined;
  addressed: boolean;
}

/** Which conversation a message of chat `kind` belongs to, where its answer goes, and whether it is addressed to the bot. */
function conversationOf(kind: ChatKind, ts: string, threadTs: string | undefined, mentioned: boolean, knownThread: boolean): Conversation {
  // A DM is addressed to the bot by definition; a reply in a DM thread stays in that thread.
  if (kind === "private") return { chatKind: kind, threadId: undefined, replyThread: threadTs, addressed: true };
  if (threadTs !== undefined) return { chatKind: kind, threadId: threadTs, replyThread: threadTs, addressed: mentioned || knownThread };
  // A top-level mention in a channel is answered in a thread under it, and
  // that thread becomes the conversation (see startsThread).
  if (mentioned) return { chatKind: "thread", threadId: ts, replyThread: ts, addressed: true };
  return { chatKind: kind, threadId: undefined, replyThread: undefined, addressed: false };
}

/**
 * message_changed / message_deleted: a change of the earlier message, not a
 * turn. The message as it is now (or was, for a delete) is normalized like
 * any message, so the change lands on the chat and message the original did.
 * A message_changed whose text did not change (a link unfurl) is nothing.
 */
function changeOf(
  body: unknown,
  event: Obj,
  subtype: "message_changed" | "message_deleted",
  me: SlackIdentity,
  opts: NormalizeOptions,
): InboundEnvelope | undefined {
  const inner = subtype === "message_changed" ? event.message : event.previous_message;
  if (!isObj(inner)) return undefined;
  const before = event.previous_message;
  if (subtype === "message_changed" && isObj(before) && before.text === inner.text) return undefined;
  const as: Obj = { ...inner, type: "message", channel: event.channel, channel_type: event.channel_type };
  delete as.subtype;
  delete as.hidden;
  const outer = isObj(body) ? { ...body, event: as } : as;
  const env = normalizeUnsafe(outer, me, opts);
  const ts = subtype === "message_changed" ? inner.ts : (event.deleted_ts ?? inner.ts);
  if (!env || !isSlackTs(ts)) return undefined;
  env.change = { kind: subtype === "message_changed" ? "edit" : "delete", messageId: ts };
  const editedTs = isObj(inner.edited) ? str(inner.edited.ts) : undefined;
  env.eventId = `${env.eventId}:${subtype === "message_changed" ? `edit:${editedTs ?? str(event.ts) ?? ""}` : "delete"}`;
  if (subtype === "message_deleted") env.text = "";
  return env;
}

/** The envelope is a top-level channel mention that the bot answers in a new thread under it. */
export function startsThread(env: InboundEnvelope): boolean {
  return env.chatKind === "thread" && env.threadId !== undefined && env.threadId === env.messageId;
}
