import type { Database } from "./db.js";

export type DeliveryStatus = "pending" | "sending" | "sent" | "failed" | "expired";

export interface DeliveryRecord {
  id: string;
  inboundId: string | null;
  sessionId: string;
  platform: string;
  botId: string;
  address: string;
  part: number;
  text: string;
  status: string;
  attempts: number;
  platformMessageId: string | null;
  lastError: string | null;
  createdAt: Date;
  expiresAt: Date;
  sentAt: Date | null;
}

/**
 * Outbound replies. Every reply is written (pending) before it is sent, in
 * the same transaction that records the turn; it is marked `sending` just
 * before the platform call and `sent` with the platform message id after.
 */
export class DeliveryStore {
  constructor(readonly db: Database) {}

  async markSending(id: string, owner?: string): Promise<boolean> {
    const r = await this.db.write((c) =>
      c.outboundDelivery.updateMany({ where: { id, status: { in: ["pending", "sending"] } }, data: { status: "sending", attempts: { increment: 1 }, owner: owner ?? null, claimedAt: new Date() } }),
    );
    return r.count === 1;
  }

  async markSent(id: string, platformMessageId: string | undefined): Promise<void> {
    await this.db.write((c) => c.outboundDelivery.updateMany({ where: { id }, data: { status: "sent", platformMessageId: platformMessageId ?? null, sentAt: new Date(), lastError: null } }));
  }

  async markFailed(id: string, status: "failed" | "expired", error: string): Promise<void> {
    await this.db.write((c) => c.outboundDelivery.updateMany({ where: { id, status: { notIn: ["sent"] } }, data: { status, lastError: error.slice(0, 500) } }));
  }

  /**
   * Replies written but not confirmed sent, oldest first. With `staleAfterMs`
   * (several processes), only those abandoned that long: another live
   * process may still be sending the fresher ones.
   */
  unsent(opts: { limit?: number; staleAfterMs?: number } = {}): Promise<DeliveryRecord[]> {
    const cutoff = opts.staleAfterMs ? new Date(Date.now() - opts.staleAfterMs) : undefined;
    return this.db.read((c) =>
      c.outboundDelivery.findMany({
        where: cutoff
          ? { OR: [{ status: "pending", createdAt: { lt: cutoff } }, { status: "sending", claimedAt: { lt: cutoff } }] }
          : { status: { in: ["pending", "sending"] } },
        orderBy: [{ createdAt: "asc" }, { part: "asc" }],
        take: opts.limit ?? 1000,
      }),
    );
  }

  find(id: string): Promise<DeliveryRecord | null> {
    return this.db.read((c) => c.outboundDelivery.findUnique({ where: { id } }));
  }
}
