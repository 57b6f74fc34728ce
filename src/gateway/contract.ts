/**
 * The adapter contract: what every platform adapter (adapters/<platform>/)
 * and the web console implement. It lives here, below adapters/, so the
 * gateway can use it without importing an adapter; adapters/types.ts
 * re-exports it.
 */
import { SwitchboardError } from "../errors.js";
import type { ReplyAddress, Severity } from "../runtime/events.js";
import type { ApprovalCard } from "../runtime/approvals/card.js";

export type { ReplyAddress, ApprovalCard, Severity };
/** How every adapter draws and decodes approval cards (the core's card model, src/runtime/approvals/card.ts). */
export { BUTTONS, cardText, cardTitle, decodeAction, encodeAction, statusLine, type ApprovalAction } from "../runtime/approvals/card.js";
/** How a card's arguments are shown whole: in the card when they fit, else in numbered parts posted before it. */
export {
  argumentsLine,
  HEADING_ROOM,
  layoutArguments,
  partHeading,
  STATUS_ROOM,
  unitWeight,
  weigh,
  type ArgumentsPart,
  type Weight,
} from "../runtime/approvals/arguments.js";
/** An adapter's file endpoint (Adapter.files): defined beside the download in src/runtime/media/, part of the contract. */
export type { FileLocation, FileOrigin, FileRef, FileSource } from "../runtime/media/types.js";

export type Platform = "telegram" | "discord" | "slack" | "console";
export type ChatKind = "private" | "group" | "thread";

export interface Attachment {
  kind: "photo" | "document" | "voice" | "audio" | "video" | "sticker" | "other";
  /** The platform's file id or URL. */
  fileId: string;
  /** Where the platform serves the file, when the event says (Slack's url_private_download); the adapter's `files` fetches from it. */
  url?: string;
  name?: string;
  mimeType?: string;
  size?: number;
  width?: number;
  height?: number;
  durationSec?: number;
}

/** One normalized inbound message, the same shape from every platform. */
export interface InboundEnvelope {
  platform: Platform;
  botId: string;
  chatKind: ChatKind;
  /** External chat (DM channel, group, channel) id. */
  chatId: string;
  /**
   * External thread/topic id when chatKind is "thread": unique at least
   * within the chat (the gateway keys the thread's group on chatId + threadId).
   * Sending uses replyTo, which carries the platform's raw routing ids.
   */
  threadId?: string;
  senderId: string;
  senderName?: string;
  /** A bot wrote it: the gateway ignores it (an adapter that admits bots, Discord's DISCORD_ALLOW_BOTS, leaves it unset). */
  senderIsBot?: boolean;
  /**
   * The platform says the sender administers this place, as ADMIN_USERS would
   * (Slack: the user who installed the app into this workspace). Set only by
   * an adapter, from its own records.
   */
  senderAdministers?: boolean;
  /** The platform workspace the chat is in (a Slack team): /metrics counts messages and failures per workspace. */
  workspace?: string;
  text: string;
  /** The text's length as sent, when the gateway cut it to MAX_INBOUND_CHARS before storing it. */
  textLength?: number;
  attachments?: Attachment[];
  /** The bot was @-mentioned, replied to, or a command was addressed to it. */
  mentioned: boolean;
  /** The platform message or event id: the dedupe key together with platform + botId. */
  eventId: string;
  /** The platform message id (for replies and reactions); often equal to eventId. */
  messageId?: string;
  /** When the platform says the message was sent. */
  occurredAt: Date;
  replyTo: ReplyAddress & { platform: Platform };
  /** The durable channel value for a private binding, e.g. telegram:<botId>:dm:<chatId>. */
  channel: string;
  /** Title of the group or channel, if known. */
  chatTitle?: string;
  /**
   * Set when the event changes an earlier message instead of saying
   * something new: the user edited message `messageId` (text is its new
   * text) or deleted it. A change is applied to the transcript and never
   * answered. eventId must differ per change (an edit's timestamp, say).
   */
  change?: { kind: "edit" | "delete"; messageId: string };
}

/** What the adapter declares about the platform's limits. */
export interface AdapterLimits {
  /** Maximum characters in one message. */
  maxTextLength: number;
  /** Minimum milliseconds between edits of one message, per chat kind. */
  editIntervalMs: { private: number; group: number };
  /** Sustained messages per second in one chat, and burst. */
  perChat: { ratePerSec: number; burst: number };
  /** Sustained calls per second for the whole bot, and burst. */
  global: { ratePerSec: number; burst: number };
  /** Whether messages can be edited in place (streaming). */
  canEdit: boolean;
}

/**
 * How an adapter writes the agent's Markdown for its platform
 * (adapters/<platform>/format.ts). Rendering comes before splitting, so each
 * chunk is measured as it is sent.
 */
export interface ReplyFormat {
  /**
   * The Markdown rendered for the platform and split into messages that fit its limit, in order.
   * A notice's `severity` is marked the platform's way (warn, error and success look different; info is plain).
   */
  chunks(markdown: string, severity?: Severity): string[];
  /**
   * The Markdown shown as written (escaped for the platform, not parsed) and split the same way:
   * what is sent when `chunks` throws, so a rendering failure never loses a reply.
   */
  literal(markdown: string, severity?: Severity): string[];
  /** A rendered chunk the platform refused as too long, split into smaller rendered chunks of at most `limit`. */
  split(chunk: string, limit: number): string[];
  /** A rendered chunk the platform could not parse, as the plain text to send instead (with SendOptions.plain). */
  plain(chunk: string): string;
}

export interface SentMessage {
  /** The platform message id of what was sent. */
  messageId: string;
}

/** How one message is sent. */
export interface SendOptions {
  /**
   * Stable per reply chunk (delivery id + chunk index). Adapters whose
   * platform deduplicates on a client key (Discord's nonce with
   * enforce_nonce) pass it on, so a resend after a crash is not shown twice.
   */
  idempotencyKey?: string;
  /** Send the text as it is, without the platform's formatting (after a formatting refusal). */
  plain?: boolean;
  /** The chunk is part of a notice of this severity (the console styles it; the platforms' formats already marked the text). */
  severity?: Severity;
}

/**
 * The outbound half of an adapter. The gateway makes every call, leave and
 * read-back included, from one file (src/gateway/outbound/sink-calls.ts),
 * each inside the adapter's OutboundScheduler: paced, in the chat's order,
 * a RateLimited error waited out and the same call made again, a Transient
 * one retried. So a call may be made again after it failed: a sink that
 * posts several messages in one call (a card with its argument parts) may
 * post the earlier ones again.
 */
export interface AdapterSink {
  send(to: ReplyAddress, text: string, opts?: SendOptions): Promise<SentMessage>;
  edit(to: ReplyAddress, messageId: string, text: string, opts?: Pick<SendOptions, "plain">): Promise<void>;
  typing(to: ReplyAddress): Promise<void>;
  /** React to or acknowledge the user's message, where the platform has it. */
  react?(to: ReplyAddress, messageId: string, emoji: string): Promise<void>;
  /**
   * Read-back, for platforms that can show what a bot already posted (Slack
   * keeps each message's metadata): of the reply chunks named by `keys`
   * (their idempotency keys), the ones the chat already shows, posted at or
   * after `since`. The gateway asks before resending a reply a crash left
   * `sending`, so a chunk that reached the platform is not posted twice.
   * Platforms without it (Telegram) may show such a chunk twice.
   */
  findSent?(to: ReplyAddress, keys: readonly string[], since: Date): Promise<Map<string, SentMessage>>;
  /**
   * An approval card with the platform's own buttons (adapters/<platform>/approval-card.ts),
   * each carrying encodeAction(action, id). Without it the card goes as text with `/approve <id>`.
   */
  sendCard?(to: ReplyAddress, card: ApprovalCard): Promise<SentMessage>;
  /**
   * Arguments too long for the card go first, in numbered parts: how many
   * (0 when they fit), and each one's message. The outbound door sends each
   * part as a call of its own and the card last, so a 429 or a failure
   * retries that one message and never shows a part twice.
   */
  cardParts?(card: ApprovalCard): number;
  sendCardPart?(to: ReplyAddress, card: ApprovalCard, index: number): Promise<SentMessage>;
  /** Redraws a card in place once decided (its buttons gone). */
  editCard?(to: ReplyAddress, messageId: string, card: ApprovalCard): Promise<void>;
  /**
   * The bot leaves a group it was not admitted to (GROUP_UNADMITTED=leave):
   * `chatId` is the envelope's group chat id. Telegram leaveChat, Discord
   * leaves the channel's whole server (a bot cannot leave one channel),
   * Slack conversations.leave. Through the scheduler like every call, in the
   * chat's order.
   */
  leave?(chatId: string): Promise<void>;
  /**
   * The command addressed at `to` gets no reply (a group the bot was not admitted to): clears what the
   * platform shows while it waits for one. Discord deletes a slash command's deferred "thinking..."
   * response, which would otherwise hang for 15 minutes in front of the channel; resolves at once where
   * nothing waits. Through the scheduler like every call.
   */
  unanswered?(to: ReplyAddress): Promise<void>;
}

export type AdapterErrorCode =
  /** 429: wait retryAfterMs and try again. */
  | "RateLimited"
  /** The platform refused the call permanently (forbidden, chat not found, bad request). */
  | "Rejected"
  /** Network or 5xx: may succeed on retry. */
  | "Transient"
  /** The adapter is not connected. */
  | "Unavailable";

/** An error from a platform call, with the platform, a stable code, and retryAfterMs for 429s. */
export class AdapterError extends SwitchboardError<AdapterErrorCode> {
  override readonly name = "AdapterError";
  /** For RateLimited: whether the limit is the chat's or the whole bot's (the scheduler then pauses every chat). */
  readonly scope: "chat" | "global" | undefined;
  /**
   * For Rejected: why, when the refusal is about the text itself. The
   * gateway then re-splits a "too-long" chunk and resends a "bad-format"
   * one as plain text, so no reply is lost to formatting.
   */
  readonly reason: "too-long" | "bad-format" | undefined;
  constructor(
    readonly platform: Platform,
    code: AdapterErrorCode,
    message: string,
    readonly retryAfterMs?: number,
    options?: { cause?: unknown; scope?: "chat" | "global"; reason?: "too-long" | "bad-format" },
  ) {
    super(code, message, options);
    this.scope = options?.scope;
    this.reason = options?.reason;
  }
}

/**
 * An adapter that cannot be built or started as asked: `Config`, a setting is
 * missing or wrong (the message names the variable and the fix);
 * `AlreadyStarted`, start() was called on a running adapter.
 */
export class AdapterSetupError extends SwitchboardError<"Config" | "AlreadyStarted"> {
  override readonly name = "AdapterSetupError";
}

export function isAdapterError(e: unknown, code?: AdapterErrorCode): e is AdapterError {
  return e instanceof AdapterError && (code === undefined || e.code === code);
}
