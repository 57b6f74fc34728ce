import type { CommitResult, Ledger, TurnRecord } from "../runtime/ledger.js";
import type { TurnStore } from "../store/turns.js";

/**
 * The gateway's ledger: one transaction per handled event records the
 * transcript, the replies as pending deliveries, and the inbound records as
 * done. A reply never expires later than its inbound event's TTL.
 */
export class GatewayLedger implements Ledger {
  /** When each in-flight inbound event happened, for its replies' expiry. */
  readonly occurredAt = new Map<string, number>();

  constructor(
    private readonly turns: TurnStore,
    private readonly ttlMs: number,
  ) {}

  async commit(rec: TurnRecord): Promise<CommitResult> {
    const origin = rec.inboundIds.map((id) => this.occurredAt.get(id)).find((t) => t !== undefined) ?? Date.now();
    const expiresAt = new Date(origin + this.ttlMs);
    const r = await this.turns.commit({
      sessionId: rec.sessionId,
      inboundIds: rec.inboundIds,
      messages: rec.messages,
      turnIncrement: rec.turnIncrement,
      deliveries: rec.replies.map((reply) => ({
        platform: reply.replyTo.platform,
        botId: reply.replyTo.botId,
        address: JSON.stringify(reply.replyTo),
        text: reply.text,
        expiresAt,
      })),
    });
    for (const id of rec.inboundIds) this.occurredAt.delete(id);
    return r;
  }
}
