/**
 * Slack identifier rules, in one place (DESIGN.md: "each platform fact lives
 * once"). Everything that turns a Slack workspace, channel, thread or message
 * id into a Switchboard string, or back, goes through here; the round-trip
 * tests in test/adapters/slack/ids.test.ts pin the formats, because changing
 * one orphans every durable binding built from it.
 *
 * Slack ids (T…, C…, D…, G…, U…) are only guaranteed unique within one
 * workspace, so every durable value carries the team id.
 */
import type { ChatKind, ReplyAddress } from "../types.js";
import { channelOf } from "../../src/session/channel.js";

export const PLATFORM = "slack" as const;

const ID_RE = /^[A-Z0-9]{2,32}$/;
const TS_RE = /^\d{1,12}\.\d{1,9}$/;

/** A Slack object id: team, channel, user or bot (upper-case letters and digits). */
export function isSlackId(v: unknown): v is string {
  return typeof v === "string" && ID_RE.test(v);
}

/** A message timestamp ("1712345678.000123"): Slack's message id and thread id. */
export function isSlackTs(v: unknown): v is string {
  return typeof v === "string" && TS_RE.test(v);
}

/** The durable channel of a DM: `slack:<teamId>:<botId>:dm:<channelId>`. */
export function dmChannel(teamId: string, botId: string, channelId: string): string {
  return channelOf(PLATFORM, teamId, botId, "dm", channelId);
}

/**
 * The informational channel of a channel, private channel or group DM (and of
 * a thread in one). It has no `dm` segment: groups bind on the group.
 */
export function groupChannel(teamId: string, botId: string, channelId: string, threadTs?: string): string {
  return threadTs === undefined
    ? channelOf(PLATFORM, teamId, botId, "group", channelId)
    : channelOf(PLATFORM, teamId, botId, "group", channelId, "thread", threadTs);
}

export interface ParsedChannel {
  teamId: string;
  botId: string;
  kind: "dm" | "group";
  channelId: string;
  threadTs?: string;
}

/** Inverse of dmChannel / groupChannel; undefined for anything else. */
export function parseChannel(channel: string): ParsedChannel | undefined {
  const p = channel.split(":");
  const [platform, teamId, botId, kind, channelId] = p;
  if (platform !== PLATFORM || !isSlackId(teamId) || !isSlackId(botId) || !isSlackId(channelId)) return undefined;
  if (p.length === 5 && (kind === "dm" || kind === "group")) return { teamId, botId, kind, channelId };
  if (p.length === 7 && kind === "group" && p[5] === "thread" && isSlackTs(p[6])) return { teamId, botId, kind, channelId, threadTs: p[6] };
  return undefined;
}

/**
 * The external chat id (the envelope's chatId, and a group's identity key):
 * `<teamId>/<channelId>`, because channel ids are only unique per workspace.
 */
export function chatExternalId(teamId: string, channelId: string): string {
  return `${teamId}/${channelId}`;
}

export function parseChatExternalId(id: string): { teamId: string; channelId: string } | undefined {
  const i = id.indexOf("/");
  const teamId = id.slice(0, i);
  const channelId = id.slice(i + 1);
  return i > 0 && isSlackId(teamId) && isSlackId(channelId) ? { teamId, channelId } : undefined;
}

/**
 * The inbound dedupe key of a message: `<channel>:<ts>`. Not the Events API
 * event_id: Slack sends a `message` and an `app_mention` (two event_ids) for
 * one @-mention, and both must map to the one message so it is answered once.
 */
export function messageEventId(channelId: string, ts: string): string {
  return `${channelId}:${ts}`;
}

export function parseMessageEventId(id: string): { channelId: string; ts: string } | undefined {
  const i = id.indexOf(":");
  const channelId = id.slice(0, i);
  const ts = id.slice(i + 1);
  return isSlackId(channelId) && isSlackTs(ts) ? { channelId, ts } : undefined;
}

/** The dedupe key of a slash command: its trigger_id is unique per invocation. */
export function commandEventId(triggerId: string): string {
  return `cmd:${triggerId}`;
}

/** The kv key that remembers a thread the bot was summoned into. */
export function threadMemoryKey(botId: string, channelId: string, threadTs: string): string {
  return `slack:${botId}:thread:${channelId}:${threadTs}`;
}

/**
 * The chat kind of a conversation type. A thread reply is a "thread" in a
 * channel; in a DM it stays "private" (the DM is the conversation). Slack
 * omits channel_type on app_mention, so the id prefix decides there: D is a DM.
 */
export function chatKindOf(channelType: unknown, channelId: string, threadTs?: string): ChatKind | undefined {
  const type = channelType ?? (channelId.startsWith("D") ? "im" : "channel");
  if (type === "im") return "private";
  if (type === "channel" || type === "group" || type === "mpim") return threadTs === undefined ? "group" : "thread";
  return undefined;
}

/** What a reply address means to the Web API. */
export interface SlackTarget {
  channel: string;
  thread_ts?: string;
  teamId?: string;
  /** The Enterprise Grid org of the workspace, when it has one (its org-wide install holds the token). */
  enterpriseId?: string;
}

export function encodeReplyAddress(botId: string, t: SlackTarget): ReplyAddress & { platform: typeof PLATFORM } {
  const a: ReplyAddress & { platform: typeof PLATFORM } = { platform: PLATFORM, botId, chatId: t.channel };
  if (t.thread_ts !== undefined) a.threadId = t.thread_ts;
  if (t.teamId !== undefined) a.extra = { teamId: t.teamId };
  if (t.enterpriseId !== undefined) a.extra = { ...a.extra, enterpriseId: t.enterpriseId };
  if (t.teamId !== undefined) a.workspace = t.teamId;
  return a;
}

/** Inverse of encodeReplyAddress. Returns an explanation instead of throwing, so the sink can raise its own error. */
export function decodeReplyAddress(a: ReplyAddress): SlackTarget | { error: string } {
  if (a.platform !== PLATFORM) return { error: `reply address is for platform "${a.platform}", not slack: route it to that platform's adapter` };
  if (!isSlackId(a.chatId))
    return { error: `reply address chatId "${a.chatId}" is not a Slack channel id (such as C0123ABCD; not the "<team>/<channel>" external id)` };
  const t: SlackTarget = { channel: a.chatId };
  if (a.threadId !== undefined) {
    if (!isSlackTs(a.threadId)) return { error: `reply address threadId "${a.threadId}" is not a Slack thread_ts (such as 1712345678.000123)` };
    t.thread_ts = a.threadId;
  }
  const teamId = a.extra?.teamId;
  if (teamId !== undefined) t.teamId = teamId;
  const enterpriseId = a.extra?.enterpriseId;
  if (enterpriseId !== undefined) t.enterpriseId = enterpriseId;
  return t;
}
