/**
 * Slack Web API methods of the fake. Answers use Slack's shapes and error
 * strings ({ ok: false, error: "channel_not_found" }, ...).
 */
import { jsonParam } from "../shared.js";
import { mrkdwnView } from "./mrkdwn.js";
import { inferType, nextTs } from "./events.js";
import { SlackApiError, type SlackConversation, type SlackIdentity, type SlackSentMessage, type SlackUser } from "./types.js";

export class SlackWorld {
  readonly conversations = new Map<string, SlackConversation>();
  readonly users = new Map<string, SlackUser>();
  /** key `${channel}:${ts}` */
  readonly messages = new Map<string, Record<string, unknown>>();
  readonly reactions: { channel: string; timestamp: string; name: string; at: number }[] = [];

  constructor(readonly id: SlackIdentity) {
    this.reset();
  }

  reset(): void {
    this.conversations.clear();
    this.users.clear();
    this.messages.clear();
    this.reactions.length = 0;
    this.users.set(this.id.botUserId, { id: this.id.botUserId, name: this.id.botName, real_name: this.id.botName, is_bot: true });
  }

  /** The conversation for an id; unknown ids that look like Slack ids are created from their prefix. */
  conversation(id: string): SlackConversation | undefined {
    const known = this.conversations.get(id);
    if (known) return known;
    if (!/^[CDG][A-Z0-9]{2,}$/.test(id)) return undefined;
    const c: SlackConversation = { id, type: inferType(id) };
    this.conversations.set(id, c);
    return c;
  }

  user(id: string): SlackUser | undefined {
    const known = this.users.get(id);
    if (known) return known;
    if (!/^[UW][A-Z0-9]{2,}$/.test(id)) return undefined;
    const u: SlackUser = { id, name: id.toLowerCase(), real_name: `User ${id}` };
    this.users.set(id, u);
    return u;
  }

  /** Remembers a message the app saw or posted (for chat.update / reactions.add checks). */
  noteMessage(channel: string, msg: Record<string, unknown>): void {
    if (typeof msg.ts === "string") this.messages.set(`${channel}:${msg.ts}`, msg);
  }

  /** A channel's messages (the app's and its users'), oldest first. */
  channelMessages(channel: string): Record<string, unknown>[] {
    const out: Record<string, unknown>[] = [];
    const prefix = `${channel}:`;
    for (const [k, m] of this.messages) if (k.startsWith(prefix)) out.push(m);
    return out.sort((a, b) => tsValue(String(a.ts)) - tsValue(String(b.ts)));
  }

  /** Registers what an event_callback body tells about conversations, users and messages. */
  noteEvent(body: Record<string, unknown>): void {
    const ev = body.event as Record<string, unknown> | undefined;
    if (!ev) return;
    const channel = typeof ev.channel === "string" ? ev.channel : undefined;
    const user = typeof ev.user === "string" ? ev.user : undefined;
    if (user) this.user(user);
    if (!channel) return;
    const conv = this.conversation(channel);
    const ct = ev.channel_type;
    if (conv && (ct === "im" || ct === "mpim" || ct === "group" || ct === "channel")) conv.type = ct;
    if (conv?.type === "im" && user && user !== this.id.botUserId) conv.user ??= user;
    if (ev.subtype !== "message_changed") this.noteMessage(channel, ev);
  }
}

type Method = (p: Record<string, unknown>, token: string) => Record<string, unknown>;

/** Block Kit: a section's text holds at most 3000 characters; Slack refuses longer with invalid_blocks. */
function checkBlocks(blocks: unknown[] | undefined): void {
  for (const [i, b] of (blocks ?? []).entries()) {
    const text = (b as { type?: string; text?: { text?: unknown } }).type === "section" ? (b as { text?: { text?: unknown } }).text?.text : undefined;
    if (typeof text === "string" && text.length > 3000)
      throw new SlackApiError("invalid_blocks", {
        response_metadata: { messages: [`[ERROR] must be less than 3001 characters [json-pointer:/blocks/${i}/text/text]`] },
      });
  }
}

export interface WebApiDeps {
  world: SlackWorld;
  sent: SlackSentMessage[];
  socketUrl: () => string;
  /** Called with each message the app posts (for echoing it as an event). */
  posted: (channel: string, message: Record<string, unknown>) => void;
  changed: () => void;
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : typeof v === "number" ? String(v) : undefined);

function conversationObject(c: SlackConversation, botUserId: string): Record<string, unknown> {
  const base = {
    id: c.id,
    created: 1_700_000_000,
    is_archived: false,
    is_org_shared: false,
    is_shared: false,
    is_ext_shared: false,
    context_team_id: "T0FAKE",
    updated: Date.now(),
  };
  if (c.type === "im")
    return {
      ...base,
      is_im: true,
      is_channel: false,
      is_group: false,
      is_mpim: false,
      is_private: true,
      user: c.user ?? "U0UNKNOWN",
      is_open: true,
      priority: 0,
    };
  const name = c.name ?? (c.type === "mpim" ? `mpdm-${c.id.toLowerCase()}-1` : `channel-${c.id.toLowerCase()}`);
  return {
    ...base,
    name,
    name_normalized: name,
    is_channel: c.type === "channel",
    is_group: c.type === "group",
    is_mpim: c.type === "mpim",
    is_im: false,
    is_private: c.type !== "channel",
    is_general: false,
    is_member: !c.left,
    creator: botUserId,
    topic: { value: "", creator: "", last_set: 0 },
    purpose: { value: "", creator: "", last_set: 0 },
    num_members: c.members?.length ?? 2,
  };
}

export function createWebApi(d: WebApiDeps): Record<string, Method> {
  const { world, sent } = d;
  const id = world.id;
  const requireChannel = (p: Record<string, unknown>): string => {
    const ch = str(p.channel);
    if (!ch || !world.conversation(ch)) throw new SlackApiError("channel_not_found");
    return ch;
  };
  const botMessage = (text: string, ts: string): Record<string, unknown> => ({
    type: "message",
    text,
    user: id.botUserId,
    bot_id: id.botId,
    app_id: id.appId,
    ts,
    team: id.teamId,
    bot_profile: { id: id.botId, app_id: id.appId, name: id.botName, icons: {}, deleted: false, updated: 1_700_000_000, team_id: id.teamId },
  });

  const post = (p: Record<string, unknown>, ephemeralTo?: string): Record<string, unknown> => {
    const channel = requireChannel(p);
    if (world.conversation(channel)?.left) throw new SlackApiError("not_in_channel");
    const text = str(p.text) ?? "";
    const blocks = jsonParam<unknown[]>(p.blocks);
    const attachments = jsonParam<unknown[]>(p.attachments);
    if (!text && !blocks?.length && !attachments?.length) throw new SlackApiError("no_text");
    if (text.length > 40_000) throw new SlackApiError("msg_too_long");
    checkBlocks(blocks);
    const ts = nextTs();
    const msg = botMessage(text, ts);
    if (blocks) msg.blocks = blocks;
    if (attachments) msg.attachments = attachments;
    // Message metadata (event_type + event_payload) is kept with the message and shown by
    // conversations.history / conversations.replies when asked with include_all_metadata.
    const metadata = jsonParam<Record<string, unknown>>(p.metadata);
    if (metadata !== undefined) {
      if (typeof metadata.event_type !== "string" || typeof metadata.event_payload !== "object" || metadata.event_payload === null)
        throw new SlackApiError("invalid_metadata_format");
      msg.metadata = { event_type: metadata.event_type, event_payload: metadata.event_payload };
    }
    const threadTs = str(p.thread_ts);
    if (threadTs) {
      msg.thread_ts = threadTs;
      msg.parent_user_id = (world.messages.get(`${channel}:${threadTs}`)?.user as string | undefined) ?? id.botUserId;
    }
    const rec: SlackSentMessage = { channel, ts, text, history: [text], message: msg, at: Date.now() };
    // mrkdwn defaults to true; the SDK sends booleans in a form body as strings.
    if (String(p.mrkdwn ?? "true") !== "false") rec.mrkdwn = mrkdwnView(text);
    if (threadTs) rec.threadTs = threadTs;
    if (blocks) rec.blocks = blocks;
    if (ephemeralTo) rec.ephemeralTo = ephemeralTo;
    sent.push(rec);
    if (!ephemeralTo) {
      world.noteMessage(channel, msg);
      d.posted(channel, msg);
    }
    d.changed();
    return ephemeralTo ? { message_ts: ts } : { channel, ts, message: msg };
  };

  return {
    "auth.test": () => ({
      url: `https://${id.teamDomain}.slack.com/`,
      team: id.teamName,
      user: id.botName,
      team_id: id.teamId,
      user_id: id.botUserId,
      bot_id: id.botId,
      app_id: id.appId,
      is_enterprise_install: false,
    }),
    "chat.postMessage": (p) => post(p),
    "chat.postEphemeral": (p) => {
      const user = str(p.user);
      if (!user || !world.user(user)) throw new SlackApiError("user_not_found");
      return post(p, user);
    },
    "chat.update": (p) => {
      const channel = requireChannel(p);
      const ts = str(p.ts);
      const msg = ts ? world.messages.get(`${channel}:${ts}`) : undefined;
      if (!ts || !msg) throw new SlackApiError("message_not_found");
      if (msg.user !== id.botUserId && msg.bot_id !== id.botId) throw new SlackApiError("cant_update_message");
      const text = str(p.text) ?? "";
      const blocks = jsonParam<unknown[]>(p.blocks);
      if (!text && !blocks?.length) throw new SlackApiError("no_text");
      checkBlocks(blocks);
      msg.text = text;
      if (blocks) msg.blocks = blocks;
      msg.edited = { user: id.botUserId, ts: nextTs() };
      const rec = sent.find((s) => s.channel === channel && s.ts === ts);
      if (rec) {
        rec.text = text;
        rec.history.push(text);
        if (blocks) rec.blocks = blocks;
      }
      d.changed();
      return { channel, ts, text, message: { ...msg } };
    },
    "reactions.add": (p) => {
      const channel = requireChannel(p);
      const timestamp = str(p.timestamp);
      const name = str(p.name)?.replace(/^:|:$/g, "");
      if (!timestamp) throw new SlackApiError("no_item_specified");
      if (!name) throw new SlackApiError("invalid_name");
      if (!world.messages.has(`${channel}:${timestamp}`)) throw new SlackApiError("message_not_found");
      if (world.reactions.some((r) => r.channel === channel && r.timestamp === timestamp && r.name === name)) throw new SlackApiError("already_reacted");
      world.reactions.push({ channel, timestamp, name, at: Date.now() });
      d.changed();
      return {};
    },
    // Documented: ok even when the bot is not a member (then not_in_channel: true); a DM cannot be left.
    "conversations.leave": (p) => {
      const c = world.conversation(requireChannel(p))!;
      if (c.type === "im") throw new SlackApiError("method_not_supported_for_channel_type");
      if (c.left) return { not_in_channel: true };
      c.left = true;
      d.changed();
      return {};
    },
    "conversations.info": (p) => {
      const ch = str(p.channel);
      const c = ch ? world.conversation(ch) : undefined;
      if (!c) throw new SlackApiError("channel_not_found");
      return { channel: conversationObject(c, id.botUserId) };
    },
    "users.info": (p) => {
      const uid = str(p.user);
      const u = uid ? world.user(uid) : undefined;
      if (!u) throw new SlackApiError("user_not_found");
      const realName = u.real_name ?? u.name;
      return {
        user: {
          team_id: id.teamId,
          deleted: false,
          tz: "Europe/Berlin",
          tz_offset: 3600,
          is_admin: false,
          is_owner: false,
          is_app_user: false,
          is_bot: false,
          updated: 1_700_000_000,
          ...u,
          real_name: realName,
          profile: {
            real_name: realName,
            display_name: u.name,
            real_name_normalized: realName,
            display_name_normalized: u.name,
            team: id.teamId,
            ...(u.is_bot ? { bot_id: id.botId } : {}),
          },
        },
      };
    },
    "conversations.history": (p) => {
      const channel = requireChannel(p);
      const window = timeline(p);
      // Top-level messages (thread replies stay in their thread), newest first.
      const all = world
        .channelMessages(channel)
        .filter((m) => !isReply(m) && window(String(m.ts)))
        .reverse();
      return pageOf(all, p, 100, 999);
    },
    "conversations.replies": (p) => {
      const channel = requireChannel(p);
      const ts = str(p.ts);
      if (!ts) throw new SlackApiError("invalid_arguments");
      const asked = world.messages.get(`${channel}:${ts}`);
      if (!asked) throw new SlackApiError("thread_not_found");
      const parentTs = typeof asked.thread_ts === "string" ? asked.thread_ts : ts;
      const parent = world.messages.get(`${channel}:${parentTs}`) ?? asked;
      const window = timeline(p);
      // The parent first, then its replies oldest first.
      const replies = world.channelMessages(channel).filter((m) => m.thread_ts === parentTs && m.ts !== parentTs && window(String(m.ts)));
      return pageOf([parent, ...replies], p, 1000, 1000);
    },
    "apps.connections.open": () => ({ url: d.socketUrl() }),
  };
}

const isReply = (m: Record<string, unknown>): boolean => typeof m.thread_ts === "string" && m.thread_ts !== m.ts;

/** A ts as one comparable number (seconds and microseconds). */
export function tsValue(ts: string): number {
  const m = /^(\d+)(?:\.(\d{1,6}))?$/.exec(ts);
  if (!m) return NaN;
  return Number(m[1]) * 1e6 + Number((m[2] ?? "").padEnd(6, "0"));
}

/** `oldest` / `latest` / `inclusive`, as conversations.history and .replies read them (latest defaults to now). */
function timeline(p: Record<string, unknown>): (ts: string) => boolean {
  const bound = (name: "oldest" | "latest"): number | undefined => {
    const v = str(p[name]);
    if (v === undefined) return undefined;
    const n = tsValue(v);
    if (Number.isNaN(n)) throw new SlackApiError(`invalid_ts_${name}`);
    return n;
  };
  const oldest = bound("oldest");
  const latest = bound("latest");
  const inclusive = p.inclusive === true || p.inclusive === "true" || p.inclusive === "1" || p.inclusive === 1;
  return (ts) => {
    const n = tsValue(ts);
    if (oldest !== undefined && (inclusive ? n < oldest : n <= oldest)) return false;
    if (latest !== undefined && (inclusive ? n > latest : n >= latest)) return false;
    return true;
  };
}

/**
 * Cursor pagination as Slack does it: `limit` items (default, capped), and
 * while more remain `has_more: true` with an opaque
 * `response_metadata.next_cursor`. Metadata shows only with include_all_metadata.
 */
function pageOf(list: Record<string, unknown>[], p: Record<string, unknown>, defaultLimit: number, maxLimit: number): Record<string, unknown> {
  const rawLimit = Number(str(p.limit) ?? defaultLimit);
  const limit = Number.isFinite(rawLimit) && rawLimit > 0 ? Math.min(Math.floor(rawLimit), maxLimit) : defaultLimit;
  let start = 0;
  const cursor = str(p.cursor);
  if (cursor) {
    const m = /^next_ts:(\d+\.\d+)$/.exec(Buffer.from(cursor, "base64").toString("utf8"));
    start = m ? list.findIndex((x) => x.ts === m[1]) : -1;
    if (start < 0) throw new SlackApiError("invalid_cursor");
  }
  const withMetadata = p.include_all_metadata === true || p.include_all_metadata === "true" || p.include_all_metadata === "1" || p.include_all_metadata === 1;
  const messages = list.slice(start, start + limit).map((m) => {
    const { channel: _c, event_ts: _e, channel_type: _t, metadata, ...rest } = m;
    return withMetadata && metadata !== undefined ? { ...rest, metadata } : rest;
  });
  const next = list[start + limit];
  return {
    messages,
    has_more: next !== undefined,
    pin_count: 0,
    response_metadata: { next_cursor: next ? Buffer.from(`next_ts:${String(next.ts)}`).toString("base64") : "" },
  };
}
