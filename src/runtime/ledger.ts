import type { DeliveryRecord } from "../store/deliveries.js";
import type { NewMessage, TranscriptStore } from "../store/transcript.js";
import type { ReplyAddress, Severity } from "./events.js";

/** A reply the handling of one inbound event produced: the answer, or a notice. */
export interface Reply {
  replyTo: ReplyAddress;
  text: string;
  kind: "reply" | "notice";
  severity?: Severity;
}

/**
 * Everything one handled inbound event changes, committed together: the new
 * transcript messages, the turn count, the replies to send, and (in the
 * gateway's ledger) the inbound record marked done. One commit per event is
 * what makes "answered exactly once" survive a crash.
 */
export interface TurnRecord {
  sessionId: string;
  /** The inbound records this handling answers (several when messages were collected into one turn). */
  inboundIds: string[];
  messages: NewMessage[];
  turnIncrement: number;
  replies: Reply[];
}

export interface CommitResult {
  /**
   * "archived"/"missing": the transcript part was refused; replies and inbound state were still recorded.
   * "duplicate": the inbound records were already handled (an earlier attempt of this commit did land,
   * its acknowledgement lost): nothing was written again, and its replies are already on their way.
   */
  transcript: "ok" | "archived" | "missing" | "skipped" | "duplicate";
  /**
   * The delivery rows as written (pending, address typed), in the order of `replies`; empty when the ledger
   * keeps no delivery records, and for "duplicate".
   */
  deliveries: DeliveryRecord[];
}

export interface Ledger {
  commit(rec: TurnRecord): Promise<CommitResult>;
}

/** The runtime's own ledger: the transcript only. The gateway supplies one that also records deliveries. */
export class TranscriptLedger implements Ledger {
  constructor(private readonly transcript: TranscriptStore) {}

  async commit(rec: TurnRecord): Promise<CommitResult> {
    if (rec.messages.length === 0 && rec.turnIncrement === 0) return { transcript: "skipped", deliveries: [] };
    const r = await this.transcript.append(rec.sessionId, rec.messages, { turnIncrement: rec.turnIncrement });
    return { transcript: r.status, deliveries: [] };
  }
}
