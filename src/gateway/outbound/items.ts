import type { ApprovalCard } from "../../runtime/approvals/card.js";
import type { ReplyAddress, Severity } from "../../runtime/events.js";

/**
 * What can be sent to a platform: everything that leaves for a chat is one
 * of these, handed to Outbound.enqueue (the door). Each item is queued
 * behind the chat's earlier ones and runs through the adapter's scheduler,
 * so it is paced, waits out 429s, is retried, and keeps the chat's order.
 */
export type OutboundItem =
  /**
   * A durable reply (its delivery row): sent once, in order behind the chat's
   * replies, its claim kept fresh while it waits. `to` is its address as the
   * event that made it carried it; without it the row's is read.
   */
  | { kind: "reply"; deliveryId: string; to?: ReplyAddress; severity?: Severity }
  /** The typing indicator: best effort, dropped while the chat is rate-limited. */
  | { kind: "typing"; to: ReplyAddress }
  /** An approval card (and the argument parts before it): resolves to the card's message id. */
  | { kind: "card"; to: ReplyAddress; card: ApprovalCard }
  /** A card redrawn in place once decided. */
  | { kind: "card-edit"; to: ReplyAddress; messageId: string; card: ApprovalCard }
  /** A fixed line of the gateway's own, sent as it is, with no delivery row (where none could be written, or none is needed). */
  | { kind: "line"; to: ReplyAddress; text: string; severity?: Severity }
  /** The bot leaves the group `chatId` (`to` is where it was addressed): resolves false where the platform cannot. */
  | { kind: "leave"; to: ReplyAddress; chatId: string }
  /** A command that gets no reply: what the platform shows while it waits is cleared (AdapterSink.unanswered). */
  | { kind: "unanswered"; to: ReplyAddress };

/** What enqueueing each kind of item resolves to. */
export interface OutboundResults {
  reply: void;
  typing: void;
  card: string;
  "card-edit": void;
  line: void;
  leave: boolean;
  unanswered: void;
}

export type OutboundResult<I extends OutboundItem> = OutboundResults[I["kind"]];
