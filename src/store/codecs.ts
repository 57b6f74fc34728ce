import { z } from "zod";
import { StoreError } from "./errors.js";

/**
 * One codec per JSON column: what the column holds, written with `encode`
 * and read back only through `decode`, which checks the value against the
 * column's schema. A value that is not what its column holds (hand-edited,
 * written by an older build, cut) is a StoreError `Unreadable` naming the
 * table and column, never a value cast into a type it does not have. The
 * types live here, at the bottom of the layers: the runtime's ReplyAddress is
 * this one.
 */
export class ColumnCodec<T> {
  constructor(
    readonly table: string,
    readonly column: string,
    private readonly schema: z.ZodType<T>,
  ) {}

  /** The column's text for `value` (already typed, so not checked again on the write path). */
  encode(value: T): string {
    return JSON.stringify(value);
  }

  /** The column's value, checked; `row` names the row in the error. */
  decode(text: string, row?: string): T {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw this.#unreadable(row, "is not JSON", err);
    }
    const r = this.schema.safeParse(json);
    if (!r.success) {
      const issue = r.error.issues[0];
      throw this.#unreadable(
        row,
        `does not hold what the column holds (${issue ? `${issue.path.join(".") || "value"}: ${issue.message}` : "invalid"})`,
        r.error,
      );
    }
    return r.data;
  }

  #unreadable(row: string | undefined, why: string, cause: unknown): StoreError {
    return new StoreError(
      "Unreadable",
      `${this.table}.${this.column}${row ? ` of row ${row}` : ""} ${why}: the row was changed outside Switchboard or by an incompatible version; fix or delete it`,
      { cause },
    );
  }
}

/** Where a reply goes: enough for the adapter's sink to address the platform. */
export interface ReplyAddress {
  platform: string;
  /** The bot (agent) that received the message and must answer. */
  botId: string;
  /** Platform chat/channel id the reply is sent to. */
  chatId: string;
  /** Thread, forum topic or Slack thread_ts, when the reply goes into one. */
  threadId?: string;
  /** The platform message id to reply to (quote), when the platform supports it. */
  replyToMessageId?: string;
  /** Routing facts some platforms need (e.g. Slack's team id). */
  extra?: Record<string, string>;
  /** Whether the chat is private or a group (pacing differs); set by the gateway. */
  kind?: "private" | "group";
  /** The platform workspace the chat is in (a Slack team), for per-workspace metrics; set by the adapter. */
  workspace?: string;
}

const replyAddress = z.object({
  platform: z.string(),
  botId: z.string(),
  chatId: z.string(),
  threadId: z.string().optional(),
  replyToMessageId: z.string().optional(),
  extra: z.record(z.string(), z.string()).optional(),
  workspace: z.string().optional(),
  kind: z.enum(["private", "group"]).optional(),
}) satisfies z.ZodType<ReplyAddress>;

/** The platforms an envelope or a conversation's template may name (the adapter contract's Platform). */
const platform = z.enum(["telegram", "discord", "slack", "console"]);
const chatKind = z.enum(["private", "group", "thread"]);
const platformAddress = replyAddress.extend({ platform });

/** The one date reviver: JSON holds a Date as its ISO text. */
const isoDate = z.union([z.date(), z.iso.datetime({ offset: true }).transform((s) => new Date(s))]);

const attachment = z.object({
  kind: z.enum(["photo", "document", "voice", "audio", "video", "sticker", "other"]),
  fileId: z.string(),
  url: z.string().optional(),
  name: z.string().optional(),
  mimeType: z.string().optional(),
  size: z.number().optional(),
  width: z.number().optional(),
  height: z.number().optional(),
  durationSec: z.number().optional(),
});

/** A normalized inbound message as recorded (the adapter contract's InboundEnvelope). */
const envelope = z.object({
  platform,
  botId: z.string(),
  chatKind,
  chatId: z.string(),
  threadId: z.string().optional(),
  senderId: z.string(),
  senderName: z.string().optional(),
  senderIsBot: z.boolean().optional(),
  senderAdministers: z.boolean().optional(),
  workspace: z.string().optional(),
  text: z.string(),
  textLength: z.number().optional(),
  attachments: z.array(attachment).optional(),
  mentioned: z.boolean(),
  eventId: z.string(),
  messageId: z.string().optional(),
  occurredAt: isoDate,
  replyTo: platformAddress,
  channel: z.string(),
  chatTitle: z.string().optional(),
  change: z.object({ kind: z.enum(["edit", "delete"]), messageId: z.string() }).optional(),
});
export type StoredEnvelope = z.infer<typeof envelope>;

/** What an event synthesized for a conversation needs, as the conversation's own last message had it. */
const template = z.object({
  chatKind,
  channel: z.string(),
  chatTitle: z.string().optional(),
  /** The Slack team or Discord guild the chat is in: AGENTS_CONFIG routes by it, so a proactive turn reaches the place's agent. */
  workspace: z.string().optional(),
  /** A private chat: its person (their binding is the conversation's). */
  senderId: z.string().optional(),
  senderName: z.string().optional(),
  /** Where its replies go, without a message to quote or an interaction to answer. */
  replyTo: platformAddress,
});
export type ConversationTemplate = z.infer<typeof template>;

/** A conversation's binding coordinates (the runtime's Conversation; src/session/binding-key.ts). */
const coordinates = z.object({
  agentId: z.string(),
  userId: z.string(),
  groupId: z.string().optional(),
  channel: z.string(),
});
export type ConversationCoordinates = z.infer<typeof coordinates>;

/** The JSON columns, one codec each. */
export const codecs = {
  deliveryAddress: new ColumnCodec("OutboundDelivery", "address", replyAddress),
  approvalReplyTo: new ColumnCodec("Approval", "replyTo", replyAddress),
  jobAddress: new ColumnCodec("ScheduledJob", "address", replyAddress),
  jobTarget: new ColumnCodec("ScheduledJob", "target", coordinates),
  inboundEnvelope: new ColumnCodec("InboundEvent", "envelope", envelope),
  apiMessageEnvelope: new ColumnCodec("ApiMessage", "envelope", envelope),
  conversationTemplate: new ColumnCodec("ConversationAddress", "template", template),
} as const;
