/**
 * Builders for what Slack sends an app: Events API `event_callback` bodies
 * (message in im/channel/group/mpim, thread replies, app_mention, bot_message,
 * message_changed), slash command form fields, and the v0 request signature.
 */
import { createHmac, randomBytes } from "node:crypto";
import type { ConversationType, EventCallback, SlackIdentity } from "./types.js";

let tsCounter = 0;
/** A unique, increasing Slack message timestamp ("1712345678.000123"). */
export function nextTs(): string {
  tsCounter = (tsCounter + 1) % 1_000_000;
  return `${Math.floor(Date.now() / 1000)}.${String(tsCounter).padStart(6, "0")}`;
}

/** `v0=` + hex(HMAC-SHA256(secret, `v0:${timestamp}:${rawBody}`)). */
export function slackSignature(secret: string, timestamp: string | number, rawBody: string): string {
  return `v0=${createHmac("sha256", secret).update(`v0:${timestamp}:${rawBody}`).digest("hex")}`;
}

/** Conversation type Slack reports for an id, from its prefix (D = im, G = private/mpim, else channel). */
export function inferType(channel: string): ConversationType {
  if (channel.startsWith("D")) return "im";
  if (channel.startsWith("G")) return "group";
  return "channel";
}

export interface MessageEventInput {
  channel: string;
  user: string;
  text: string;
  /** im | channel | group | mpim (default: from the id prefix or the registered conversation). */
  channelType?: ConversationType;
  /** Makes it a thread reply. */
  threadTs?: string;
  ts?: string;
  /**
   * Slack Connect: the sender is a member of this other organisation. The
   * event then carries their team (team, user_team, source_team) while the
   * wrapper's team_id and authorizations stay the installation's, and
   * is_ext_shared_channel is true.
   */
  fromTeam?: string;
  /** Messages shared into this one (Slack's forward): attachments with is_share / is_msg_unfurl. */
  shared?: { text: string; authorName?: string; authorId?: string; channel?: string; ts?: string }[];
  extra?: Record<string, unknown>;
  /** Fields merged into the event_callback wrapper (e.g. another api_app_id). */
  wrapper?: Record<string, unknown>;
}

export class SlackEventBuilder {
  private eventSeq = 0;

  /**
   * `org`: the installation is in an Enterprise Grid org (enterprise_id on
   * every event); `orgWide`, installed org-wide, so the authorization names
   * the enterprise and no team, while team_id is the workspace the event is in.
   */
  constructor(
    private readonly id: SlackIdentity,
    private readonly typeOf: (channel: string) => ConversationType,
    private readonly responseUrl: () => string,
    private readonly org?: { enterpriseId: string; orgWide: boolean },
  ) {}

  /** Wraps an event in the event_callback envelope (event_id, event_time, team_id, authorizations). */
  callback(event: Record<string, unknown>, wrapper: Record<string, unknown> = {}): EventCallback {
    const now = Math.floor(Date.now() / 1000);
    this.eventSeq++;
    return {
      token: "fake-verification-token",
      team_id: this.id.teamId,
      context_team_id: this.id.teamId,
      context_enterprise_id: this.org?.enterpriseId ?? null,
      ...(this.org && { enterprise_id: this.org.enterpriseId }),
      api_app_id: this.id.appId,
      event: { event_ts: event.ts ?? nextTs(), ...event },
      type: "event_callback",
      event_id: `Ev0FAKE${String(this.eventSeq).padStart(6, "0")}${randomBytes(2).toString("hex").toUpperCase()}`,
      event_time: now,
      authorizations: [
        {
          enterprise_id: this.org?.enterpriseId ?? null,
          team_id: this.org?.orgWide ? null : this.id.teamId,
          user_id: this.id.botUserId,
          is_bot: true,
          is_enterprise_install: this.org?.orgWide === true,
        },
      ],
      is_ext_shared_channel: false,
      event_context: `4-fake-${randomBytes(6).toString("hex")}`,
      ...wrapper,
    } as EventCallback;
  }
  /** app_uninstalled: the app was removed from the workspace (or org); Slack sends it once, to that installation. */
  appUninstalled(): EventCallback {
    return this.callback({ type: "app_uninstalled" });
  }

  /** tokens_revoked: the named user ids' tokens (oauth: user tokens, bot: the bot's) were revoked. */
  tokensRevoked(tokens: { oauth?: string[]; bot?: string[] }): EventCallback {
    return this.callback({ type: "tokens_revoked", tokens });
  }

  /** A user's message (DM, channel, private channel, group DM; thread reply with threadTs). */
  message(o: MessageEventInput): EventCallback {
    const ts = o.ts ?? nextTs();
    const event: Record<string, unknown> = {
      type: "message",
      user: o.user,
      text: o.text,
      ts,
      team: this.id.teamId,
      client_msg_id: randomBytes(16)
        .toString("hex")
        .replace(/(.{8})(.{4})(.{4})(.{4})/, "$1-$2-$3-$4-"),
      blocks: [
        { type: "rich_text", block_id: randomBytes(3).toString("hex"), elements: [{ type: "rich_text_section", elements: [{ type: "text", text: o.text }] }] },
      ],
      channel: o.channel,
      channel_type: o.channelType ?? this.typeOf(o.channel),
      event_ts: ts,
    };
    if (o.threadTs) {
      event.thread_ts = o.threadTs;
      event.parent_user_id = o.extra?.parent_user_id ?? o.user;
    }
    const wrapper: Record<string, unknown> = { ...o.wrapper };
    if (o.fromTeam) {
      Object.assign(event, { team: o.fromTeam, user_team: o.fromTeam, source_team: o.fromTeam });
      wrapper.is_ext_shared_channel = true;
    }
    if (o.shared?.length) {
      event.attachments = o.shared.map((s, i) => ({
        id: i + 1,
        is_share: true,
        is_msg_unfurl: true,
        ts: s.ts ?? nextTs(),
        channel_id: s.channel ?? o.channel,
        channel_team: this.id.teamId,
        author_id: s.authorId ?? "U0SHARED1",
        author_name: s.authorName ?? "someone",
        text: s.text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"),
        fallback: `[shared message] ${s.text}`,
        from_url: `https://${this.id.teamDomain}.slack.com/archives/${s.channel ?? o.channel}/p${(s.ts ?? "1").replace(".", "")}`,
        mrkdwn_in: ["text"],
        footer: "Posted in a channel",
      }));
    }
    return this.callback({ ...event, ...o.extra }, wrapper);
  }

  /** app_mention (Slack sends it besides the channel `message` when the bot is @-mentioned). */
  appMention(o: Omit<MessageEventInput, "channelType" | "text"> & { text?: string }): EventCallback {
    const mention = `<@${this.id.botUserId}>`;
    const text = o.text === undefined ? mention : o.text.includes(mention) ? o.text : `${mention} ${o.text}`;
    const ts = o.ts ?? nextTs();
    const event: Record<string, unknown> = { type: "app_mention", user: o.user, text, ts, team: this.id.teamId, channel: o.channel, event_ts: ts };
    if (o.threadTs) event.thread_ts = o.threadTs;
    return this.callback({ ...event, ...o.extra });
  }

  /** subtype bot_message: another integration's post (or this bot's own with botId = identity.botId). */
  botMessage(o: { channel: string; text: string; botId?: string; username?: string; threadTs?: string; channelType?: ConversationType }): EventCallback {
    const ts = nextTs();
    const event: Record<string, unknown> = {
      type: "message",
      subtype: "bot_message",
      text: o.text,
      ts,
      bot_id: o.botId ?? "B0OTHERBOT",
      username: o.username ?? "other-bot",
      channel: o.channel,
      channel_type: o.channelType ?? this.typeOf(o.channel),
      event_ts: ts,
    };
    if (o.threadTs) event.thread_ts = o.threadTs;
    return this.callback(event);
  }

  /** subtype message_changed: the user edited message `ts`. */
  messageChanged(o: {
    channel: string;
    user: string;
    ts: string;
    text: string;
    previousText?: string;
    threadTs?: string;
    channelType?: ConversationType;
  }): EventCallback {
    const thread = o.threadTs ? { thread_ts: o.threadTs } : {};
    const eventTs = nextTs();
    return this.callback({
      type: "message",
      subtype: "message_changed",
      hidden: true,
      channel: o.channel,
      channel_type: o.channelType ?? this.typeOf(o.channel),
      ts: eventTs,
      event_ts: eventTs,
      message: { type: "message", user: o.user, text: o.text, ts: o.ts, edited: { user: o.user, ts: eventTs }, team: this.id.teamId, ...thread },
      previous_message: { type: "message", user: o.user, text: o.previousText ?? "", ts: o.ts, team: this.id.teamId, ...thread },
    });
  }

  /** subtype message_deleted: the user deleted message `ts` (Slack sends the message as it was). */
  messageDeleted(o: { channel: string; user: string; ts: string; text: string; threadTs?: string; channelType?: ConversationType }): EventCallback {
    const eventTs = nextTs();
    return this.callback({
      type: "message",
      subtype: "message_deleted",
      hidden: true,
      channel: o.channel,
      channel_type: o.channelType ?? this.typeOf(o.channel),
      ts: eventTs,
      event_ts: eventTs,
      deleted_ts: o.ts,
      previous_message: { type: "message", user: o.user, text: o.text, ts: o.ts, team: this.id.teamId, ...(o.threadTs ? { thread_ts: o.threadTs } : {}) },
    });
  }

  urlVerification(challenge = randomBytes(12).toString("hex")): { token: string; challenge: string; type: "url_verification" } {
    return { token: "fake-verification-token", challenge, type: "url_verification" };
  }

  /** Slash command fields (posted form-encoded in HTTP mode, as the payload in Socket Mode). */
  slashCommand(o: { command: string; text?: string; user: string; userName?: string; channel: string; channelName?: string }): Record<string, string> {
    return {
      token: "fake-verification-token",
      team_id: this.id.teamId,
      team_domain: this.id.teamDomain,
      channel_id: o.channel,
      channel_name: o.channelName ?? (o.channel.startsWith("D") ? "directmessage" : "general"),
      user_id: o.user,
      user_name: o.userName ?? o.user.toLowerCase(),
      command: o.command.startsWith("/") ? o.command : `/${o.command}`,
      text: o.text ?? "",
      api_app_id: this.id.appId,
      is_enterprise_install: "false",
      response_url: this.responseUrl(),
      trigger_id: `${Date.now()}.${randomBytes(6).toString("hex")}`,
    };
  }

  /**
   * A `block_actions` interaction: a user pressed a button of `message` (one
   * the bot posted). Shaped as Slack documents it: the pressed element in
   * `actions`, the message and its container, the channel, the user, a
   * response_url and a trigger_id. Posted as `payload=<json>` in HTTP mode,
   * sent as an `interactive` envelope in Socket Mode.
   */
  blockActions(o: {
    user: string;
    userName?: string;
    channel: string;
    message: Record<string, unknown>;
    actionId: string;
    blockId?: string;
    value?: string;
  }): Record<string, unknown> {
    const blocks = (o.message.blocks as Array<{ block_id?: string; elements?: Array<Record<string, unknown>> }> | undefined) ?? [];
    const element = blocks
      .flatMap((b) => (b.elements ?? []).map((e): Record<string, unknown> => ({ ...e, block_id: b.block_id })))
      .find((e) => e.action_id === o.actionId);
    return {
      type: "block_actions",
      user: { id: o.user, username: o.userName ?? o.user.toLowerCase(), name: o.userName ?? o.user.toLowerCase(), team_id: this.id.teamId },
      api_app_id: this.id.appId,
      token: "fake-verification-token",
      container: {
        type: "message",
        message_ts: o.message.ts,
        channel_id: o.channel,
        is_ephemeral: false,
        ...(o.message.thread_ts ? { thread_ts: o.message.thread_ts } : {}),
      },
      trigger_id: `${Date.now()}.${randomBytes(6).toString("hex")}`,
      team: { id: this.id.teamId, domain: this.id.teamDomain },
      enterprise: null,
      is_enterprise_install: false,
      channel: { id: o.channel, name: o.channel.startsWith("D") ? "directmessage" : "general" },
      message: o.message,
      state: { values: {} },
      response_url: this.responseUrl(),
      actions: [
        {
          type: "button",
          action_id: o.actionId,
          block_id: o.blockId ?? element?.block_id ?? "",
          text: element?.text ?? { type: "plain_text", text: "" },
          value: o.value ?? element?.value ?? "",
          action_ts: nextTs(),
          ...(element?.style ? { style: element.style } : {}),
        },
      ],
    };
  }
}
