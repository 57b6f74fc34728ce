/** What the approval service is given: its store, the way its cards reach the chat, who may decide, and its clocks. */
import type { Logger } from "../../log.js";
import type { ApprovalStatus, ApprovalStore } from "../../store/approvals.js";
import type { KvStore } from "../../store/kv.js";
import type { ReplyAddress } from "../events.js";
import type { ApprovalCard } from "./card.js";
import type { ApprovalClick } from "./decision.js";

export type Approvers = "requester" | "admins" | "anyone";

/** How the service reaches the chat: the gateway implements it over the adapters' sinks. */
export interface CardTransport {
  /** Shows the card; resolves to its platform message id. */
  show(to: ReplyAddress, card: ApprovalCard): Promise<string | undefined>;
  update(to: ReplyAddress, messageId: string, card: ApprovalCard): Promise<void>;
}

export interface ApprovalServiceOptions {
  store: ApprovalStore;
  kv: KvStore;
  transport: CardTransport;
  /** This process: a waiter lives only here. */
  owner: string;
  timeoutMs: number;
  approvers: Approvers;
  /** THREAD_SESSIONS=parent: a thread or forum topic shares its chat's session, so an "Always" grant in it is the chat's. */
  threadsShareChat?: boolean;
  log?: Logger;
  /** Several processes share the database: a waiter also polls its row, since the click may land on another process. */
  pollMs?: number;
  /**
   * Whether the clicker passes the DM policy (paired, allowlisted,
   * DM_POLICY=open), as the gateway judges it, asked only when someone other
   * than an admin decides. Whatever APPROVERS says, nobody else decides: a
   * stranger in an open group may not approve even their own call.
   */
  mayApprove: (who: Pick<ApprovalClick, "platform" | "botId" | "senderId">) => Promise<boolean>;
  /** Counted in /metrics: decisions by outcome ("too_long": arguments too long to show, denied without asking). */
  onDecision?: (status: ApprovalStatus | "refused" | "too_long") => void;
}
