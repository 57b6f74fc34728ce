/**
 * The outbound half: every call here is made by the gateway's scheduler,
 * which paces and retries, so each method makes exactly one Web API call and
 * maps a failure to AdapterError.
 */
import type { Logger } from "../../src/log.js";
import { AdapterError, type AdapterSink, type ReplyAddress, type SendOptions, type SentMessage } from "../types.js";
import { toAdapterError, platformErrorCode } from "./errors.js";
import { decodeReplyAddress, parseChatExternalId, type SlackTarget } from "./ids.js";
import { findPosted, replyMetadata, type SlackHistoryClient } from "./readback.js";

/** The slice of Bolt's WebClient the sink uses (so tests can see exactly what it calls). */
export interface SlackWebClient extends SlackHistoryClient {
  chat: {
    postMessage(args: {
      channel: string;
      text: string;
      mrkdwn?: boolean;
      thread_ts?: string;
      metadata?: ReturnType<typeof replyMetadata>;
    }): Promise<{ ts?: string }>;
    update(args: { channel: string; ts: string; text: string }): Promise<unknown>;
  };
  reactions: { add(args: { channel: string; timestamp: string; name: string }): Promise<unknown> };
  conversations: SlackHistoryClient["conversations"] & { leave(args: { channel: string }): Promise<unknown> };
}

/** Reactions the gateway may ask for as characters; Slack wants names. */
const EMOJI_NAMES: Record<string, string> = {
  "👀": "eyes",
  "✅": "white_check_mark",
  "👍": "+1",
  "❌": "x",
  "⏳": "hourglass_flowing_sand",
  "🤔": "thinking_face",
  "⚠️": "warning",
};

export function emojiName(emoji: string): string {
  const e = emoji.trim();
  return EMOJI_NAMES[e] ?? e.replace(/^:|:$/g, "");
}

export class SlackSink implements AdapterSink {
  /** Approval cards (approval-card.ts), set by the adapter. */
  sendCard?: AdapterSink["sendCard"];
  cardParts?: AdapterSink["cardParts"];
  sendCardPart?: AdapterSink["sendCardPart"];
  editCard?: AdapterSink["editCard"];
  /**
   * `client` gives the Web API client for a target's workspace: the one
   * token's, or (installs by OAuth) the installation's of the target's team,
   * refusing one the app is no longer installed in.
   */
  constructor(
    private readonly client: (t: SlackTarget) => Promise<SlackWebClient> | SlackWebClient | undefined,
    private readonly log: () => Logger | undefined = () => undefined,
  ) {}

  /** `text` is already mrkdwn (format.ts renders the agent's Markdown, escaping &, < and >, before it is split). */
  async send(to: ReplyAddress, text: string, opts: SendOptions = {}): Promise<SentMessage> {
    const t = this.target(to);
    const c = await this.webClient(t);
    const args: Parameters<SlackWebClient["chat"]["postMessage"]>[0] = { channel: t.channel, text, mrkdwn: !opts.plain };
    if (t.thread_ts !== undefined) args.thread_ts = t.thread_ts;
    // The delivery key rides along, so findSent can tell after a crash whether this chunk got through.
    if (opts.idempotencyKey !== undefined) args.metadata = replyMetadata(opts.idempotencyKey);
    let res: { ts?: string };
    try {
      res = await c.chat.postMessage(args);
    } catch (err) {
      throw toAdapterError(err, "chat.postMessage");
    }
    if (typeof res.ts !== "string") throw new AdapterError("slack", "Transient", "Slack chat.postMessage answered without a message ts");
    return { messageId: res.ts };
  }

  async edit(to: ReplyAddress, messageId: string, text: string): Promise<void> {
    const t = this.target(to);
    try {
      await (await this.webClient(t)).chat.update({ channel: t.channel, ts: messageId, text });
    } catch (err) {
      throw toAdapterError(err, "chat.update");
    }
  }

  async findSent(to: ReplyAddress, keys: readonly string[], since: Date): Promise<Map<string, SentMessage>> {
    const t = this.target(to);
    const method = t.thread_ts !== undefined ? "conversations.replies" : "conversations.history";
    try {
      const r = await findPosted(await this.webClient(t), t, keys, since);
      if (!r.complete)
        this.log()?.warn(
          { channel: t.channel, method, missing: keys.length - r.found.size },
          "the channel is too busy to search to the end for a reply left sending by a crash; it is sent again and may show twice",
        );
      return r.found;
    } catch (err) {
      throw toAdapterError(err, method);
    }
  }

  /** Slack has no typing indicator for bots (only the legacy RTM API had one). */
  async typing(_to: ReplyAddress): Promise<void> {}

  async react(to: ReplyAddress, messageId: string, emoji: string): Promise<void> {
    const t = this.target(to);
    try {
      await (await this.webClient(t)).reactions.add({ channel: t.channel, timestamp: messageId, name: emojiName(emoji) });
    } catch (err) {
      // The reaction is there, which is all that was asked (e.g. a replayed event).
      if (platformErrorCode(err) === "already_reacted") return;
      throw toAdapterError(err, "reactions.add");
    }
  }

  /** Leaves a channel (conversations.leave; the app needs channels:manage for public ones, groups:write for private ones). */
  async leave(chatId: string): Promise<void> {
    // The envelope's chat id is TEAM/CHANNEL (ids.ts chatExternalId).
    const parsed = parseChatExternalId(chatId);
    const channel = parsed?.channelId ?? chatId;
    if (!/^[CG][A-Z0-9]{2,}$/.test(channel)) throw new AdapterError("slack", "Rejected", `"${chatId}" is not a Slack channel (C… or G…): DMs cannot be left`);
    const c = await this.webClient({ channel, ...(parsed && { teamId: parsed.teamId }) });
    try {
      await c.conversations.leave({ channel });
    } catch (err) {
      throw toAdapterError(err, "conversations.leave");
    }
  }

  private target(to: ReplyAddress): SlackTarget {
    const t = decodeReplyAddress(to);
    if ("error" in t) throw new AdapterError("slack", "Rejected", t.error);
    return t;
  }

  private async webClient(t: SlackTarget): Promise<SlackWebClient> {
    const c = await this.client(t);
    if (!c) throw new AdapterError("slack", "Unavailable", "the Slack adapter is not started; call start() first");
    return c;
  }
}
