import type { ReplyAddress } from "../store/codecs.js";
import type { TraceCarrier } from "../telemetry/index.js";
import type { ParsedCommand } from "./commands/parse.js";

/**
 * Events in and out of a live session. Replies carry the reply address of the
 * event that caused them, so they go back to the chat they came from.
 */

/** Where a reply goes: the store's type, since delivery rows, approvals and jobs keep it (src/store/codecs.ts). */
export type { ReplyAddress };

/** Who sent an event, from where. */
export interface Origin {
  platform: string;
  chatId: string;
  threadId?: string;
  senderId: string;
  senderName?: string;
  /** The platform message id. */
  messageId?: string;
  /** The sender's canonical user id. */
  userId?: string;
  /** The platform workspace the chat is in (a Slack team, a Discord guild), when the adapter says: budgets per workspace. */
  workspace?: string;
}

/** The binding coordinates of a conversation (see src/session/binding-key.ts). */
export interface Conversation {
  agentId: string;
  /** The owner: the user for a private chat, the group's UUID for a group. */
  userId: string;
  groupId?: string;
  channel: string;
}

export interface AttachmentInfo {
  kind: string;
  fileId: string;
  url?: string;
  name?: string;
  mimeType?: string;
  size?: number;
  /** A voice note's or audio file's length, when the platform says (a transcription's perMinute price is charged for it). */
  durationSec?: number;
}

interface InBase {
  origin: Origin;
  replyTo: ReplyAddress;
  conversation: Conversation;
  /**
   * The session the conversation was bound to when the event arrived. Set by
   * the runner on first take; compare-and-rotate (/new) compares against it,
   * so of several /new sent at once only the first rotates.
   */
  boundSessionId?: string;
  /** The inbound record this event came from, so its outcome is committed with it. */
  inboundId?: string;
  receivedAt: Date;
  /** The sender may run admin commands here: ADMIN_USERS, or the place's own administrator (Slack: the workspace's installer). */
  isAdmin?: boolean;
  /** The sender is one of the gateway's operators (ADMIN_USERS): their powers reach past this place. */
  isOperator?: boolean;
  /** The bot's own username, so `/cmd@otherbot` can be told apart. */
  botUsername?: string;
  /** The message's trace (src/telemetry), when tracing is on: the turn's spans continue it, however long it queued. */
  trace?: TraceCarrier;
  /**
   * The agents a user here may run with `/agent <name>`, the place's routed
   * agent (the one `conversation.agentId` names) first: its route's
   * `choosable` list (AGENTS_CONFIG). Absent: only the routed agent.
   */
  choosableAgents?: readonly string[];
}

/**
 * An event into a live session: a user's message. Commands are messages too
 * (`command`); /stop and /resume act through the middleware's capabilities
 * (src/runtime/interceptors.ts), not through events of their own.
 */
export type InEvent = InBase & {
  type: "message";
  text: string;
  /**
   * The slash command the text is, parsed once where the envelope became
   * this event (src/gateway/inbound/dispatch.ts); every later reader (the
   * approval ids, the commands) reads this, never the text again.
   */
  command?: ParsedCommand;
  attachments?: AttachmentInfo[];
  /** false: record it as context (an unaddressed group message) but do not answer. */
  respond: boolean;
};

export type MessageEvent = Extract<InEvent, { type: "message" }>;

export const OUT_KINDS = ["lifecycle", "text-delta", "text-final", "notice", "properties", "typing", "turn-complete"] as const;
export type OutKind = (typeof OUT_KINDS)[number];

export type Severity = "success" | "info" | "warn" | "error";

export type LifecyclePhase = "turn-start" | "turn-end" | "rotated" | "switched" | "stopped" | "closed";

export type OutEvent =
  | { kind: "lifecycle"; sessionId: string; phase: LifecyclePhase; replyTo?: ReplyAddress; detail?: Record<string, unknown> }
  | { kind: "text-delta"; sessionId: string; turnId: string; replyTo: ReplyAddress; delta: string; text: string; inboundId?: string }
  | { kind: "text-final"; sessionId: string; turnId: string; replyTo: ReplyAddress; text: string; inboundId?: string; deliveryId?: string }
  | { kind: "notice"; sessionId: string; severity: Severity; text: string; replyTo?: ReplyAddress; inboundId?: string; deliveryId?: string }
  | { kind: "properties"; sessionId: string; key: string; value: unknown }
  | { kind: "typing"; sessionId: string; replyTo: ReplyAddress }
  | {
      kind: "turn-complete";
      sessionId: string;
      turnId: string;
      replyTo: ReplyAddress;
      inboundId?: string /** Every inbound event the turn answered (several when collected). */;
      inboundIds?: string[];
      outcome: "answered" | "aborted" | "failed" | "fenced" | "abandoned";
    };

export type OutEventOf<K extends OutKind> = Extract<OutEvent, { kind: K }>;
