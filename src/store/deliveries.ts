import { setBounded } from "../bounded.js";
import type { Database } from "./db.js";
import { toDate, toDateOrNull } from "./sql.js";

const COLUMNS = `"id","inboundId","sessionId","platform","botId","address","part","text","status","attempts","platformMessageId","lastError","createdAt","expiresAt","sentAt"`;

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

function deliveryOf(r: Record<string, unknown>): DeliveryRecord {
  return {
    ...(r as unknown as DeliveryRecord),
    part: Number(r.part),
    attempts: Number(r.attempts),
    createdAt: toDate(r.createdAt),
    expiresAt: toDate(r.expiresAt),
    sentAt: toDateOrNull(r.sentAt),
  };
}

/**
 * Outbound replies. Every reply is written (pending) before it is sent, in
 * the same transaction that records the turn; it is marked `sending` just
 * before the platform call and `sent` with the platform message id after.
 */
export class DeliveryStore {
  /** Records this process just committed, handed to the sender without a read back (bounded; the oldest goes first). */
  readonly #fresh = new Map<string, DeliveryRecord>();

  constructor(readonly db: Database) {}

  /** Called with the records a turn's commit wrote; `take` answers from here once. */
  remember(records: DeliveryRecord[]): void {
    for (const r of records) setBounded(this.#fresh, r.id, r, 10_000);
  }

  async markSending(id: string, owner?: string): Promise<boolean> {
    const n = await this.db.exec(
      "mark-sending",
      `UPDATE "OutboundDelivery" SET "status" = ?, "attempts" = "attempts" + 1, "owner" = ?, "claimedAt" = ? WHERE "id" = ? AND "status" IN (?, ?)`,
      ["sending", owner ?? null, new Date(), id, "pending", "sending"],
    );
    return n === 1;
  }

  /** Keeps the claims of replies this process still holds (queued or sending) fresh, so no other process takes them over. */
  async renewClaims(ids: string[], owner: string): Promise<void> {
    for (let i = 0; i < ids.length; i += 500) {
      const part = ids.slice(i, i + 500);
      await this.db.exec(
        "renew-claims",
        `UPDATE "OutboundDelivery" SET "claimedAt" = ?, "owner" = ? WHERE "id" IN (${part.map(() => "?").join(",")}) AND "status" IN (?, ?)`,
        [new Date(), owner, ...part, "pending", "sending"],
      );
    }
  }

  async markSent(id: string, platformMessageId: string | undefined): Promise<void> {
    await this.db.exec("mark-sent", `UPDATE "OutboundDelivery" SET "status" = ?, "platformMessageId" = ?, "sentAt" = ?, "lastError" = ? WHERE "id" = ?`, [
      "sent",
      platformMessageId ?? null,
      new Date(),
      null,
      id,
    ]);
  }

  async markFailed(id: string, status: "failed" | "expired", error: string): Promise<void> {
    await this.db.exec("mark-failed", `UPDATE "OutboundDelivery" SET "status" = ?, "lastError" = ? WHERE "id" = ? AND "status" <> ?`, [
      status,
      error.slice(0, 500),
      id,
      "sent",
    ]);
  }

  /**
   * Replies written but not confirmed sent, oldest first. With `staleAfterMs`
   * (several processes), only those abandoned that long: another live
   * process may still be sending the fresher ones.
   */
  async unsent(opts: { limit?: number; staleAfterMs?: number } = {}): Promise<DeliveryRecord[]> {
    const limit = opts.limit ?? 1000;
    const rows = opts.staleAfterMs
      ? await this.db.query<Record<string, unknown>>(
          "unsent-stale",
          `SELECT ${COLUMNS} FROM "OutboundDelivery" WHERE ("status" = ? AND "createdAt" < ? AND ("claimedAt" IS NULL OR "claimedAt" < ?)) OR ("status" = ? AND "claimedAt" < ?) ORDER BY "createdAt" ASC, "part" ASC LIMIT ?`,
          [
            "pending",
            new Date(Date.now() - opts.staleAfterMs),
            new Date(Date.now() - opts.staleAfterMs),
            "sending",
            new Date(Date.now() - opts.staleAfterMs),
            limit,
          ],
        )
      : await this.db.query<Record<string, unknown>>(
          "unsent",
          `SELECT ${COLUMNS} FROM "OutboundDelivery" WHERE "status" IN (?, ?) ORDER BY "createdAt" ASC, "part" ASC LIMIT ?`,
          ["pending", "sending", limit],
        );
    return rows.map(deliveryOf);
  }

  /** The record the sender is about to send: the one this process just committed, else read. */
  async take(id: string): Promise<DeliveryRecord | null> {
    const fresh = this.#fresh.get(id);
    if (fresh) {
      this.#fresh.delete(id);
      return fresh;
    }
    return this.find(id);
  }

  async find(id: string): Promise<DeliveryRecord | null> {
    const [r] = await this.db.query<Record<string, unknown>>("find-delivery", `SELECT ${COLUMNS} FROM "OutboundDelivery" WHERE "id" = ?`, [id]);
    return r ? deliveryOf(r) : null;
  }

  /** Deletes up to `limit` settled replies (sent, failed, expired) created before `before`; unsent ones are kept. */
  async prune(before: Date, limit: number): Promise<number> {
    return this.db.exec(
      "prune-deliveries",
      `DELETE FROM "OutboundDelivery" WHERE "id" IN (SELECT "id" FROM "OutboundDelivery" WHERE "status" IN (?, ?, ?) AND "createdAt" < ? LIMIT ?)`,
      ["sent", "failed", "expired", before, limit],
    );
  }
}
