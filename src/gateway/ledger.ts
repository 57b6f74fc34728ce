import type { CommitResult, Ledger, TurnRecord } from "../runtime/ledger.js";
import type { TurnStore } from "../store/turns.js";

/**
 * The gateway's ledger: one transaction per handled event records the
 * transcript, the replies as pending deliveries, and the inbound records as
 * done. A reply never expires later than its inbound event's TTL: the store
 * reads when the event happened from its inbound row, in that transaction.
 */
export class GatewayLedger implements Ledger {
  constructor(
    private readonly turns: TurnStore,
    private readonly ttlMs: number,
  ) {}

  commit(rec: TurnRecord): Promise<CommitResult> {
    return this.turns.commit({
      sessionId: rec.sessionId,
      inboundIds: rec.inboundIds,
      messages: rec.messages,
      turnIncrement: rec.turnIncrement,
      deliveries: rec.replies.map((reply) => ({ address: reply.replyTo, text: reply.text })),
      ttlMs: this.ttlMs,
    });
  }
}
