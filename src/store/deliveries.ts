import type { Selectable } from "kysely";
import { setBounded } from "../bounded.js";
import type { Database } from "./db.js";
import { pruneSettled } from "./retention.js";
import type { DB } from "./sql.js";
import { prepare, type Param } from "./prepared.js";

export type DeliveryStatus = "pending" | "sending" | "sent" | "failed" | "expired";

/** An outbound reply's row (its claim columns, owner and claimedAt, stay in the store). */
export type DeliveryRecord = Omit<Selectable<DB["OutboundDelivery"]>, "owner" | "claimedAt">;

const COLUMNS = [
  "id",
  "inboundId",
  "sessionId",
  "platform",
  "botId",
  "address",
  "part",
  "text",
  "status",
  "attempts",
  "platformMessageId",
  "lastError",
  "createdAt",
  "expiresAt",
  "sentAt",
] as const;

// Hot path: compiled once (prepared.ts).
const MARK_SENDING = prepare((b, p: Param<{ id: string; sending: string; pending: string; one: number; owner: string | null; claimedAt: Date }>) =>
  b
    .updateTable("OutboundDelivery")
    .set((eb) => ({ status: p("sending"), attempts: eb("attempts", "+", p("one")), owner: p("owner"), claimedAt: p("claimedAt") }))
    .where("id", "=", p("id"))
    .where("status", "in", [p("pending"), p("sending")]),
);

const MARK_SENT = prepare((b, p: Param<{ id: string; sent: string; platformMessageId: string | null; sentAt: Date; lastError: null }>) =>
  b
    .updateTable("OutboundDelivery")
    .set({ status: p("sent"), platformMessageId: p("platformMessageId"), sentAt: p("sentAt"), lastError: p("lastError") })
    .where("id", "=", p("id")),
);

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
      MARK_SENDING.bind(this.db, { id, sending: "sending", pending: "pending", one: 1, owner: owner ?? null, claimedAt: new Date() }),
    );
    return n === 1;
  }

  /** Keeps the claims of replies this process still holds (queued or sending) fresh, so no other process takes them over. */
  async renewClaims(ids: string[], owner: string): Promise<void> {
    for (let i = 0; i < ids.length; i += 500) {
      const part = ids.slice(i, i + 500);
      await this.db.exec(
        "renew-claims",
        this.db.q.updateTable("OutboundDelivery").set({ claimedAt: new Date(), owner }).where("id", "in", part).where("status", "in", ["pending", "sending"]),
      );
    }
  }

  async markSent(id: string, platformMessageId: string | undefined): Promise<void> {
    await this.db.exec(
      "mark-sent",
      MARK_SENT.bind(this.db, { id, sent: "sent", platformMessageId: platformMessageId ?? null, sentAt: new Date(), lastError: null }),
    );
  }

  async markFailed(id: string, status: "failed" | "expired", error: string): Promise<void> {
    await this.db.exec(
      "mark-failed",
      this.db.q
        .updateTable("OutboundDelivery")
        .set({ status, lastError: error.slice(0, 500) })
        .where("id", "=", id)
        .where("status", "<>", "sent"),
    );
  }

  /**
   * Replies written but not confirmed sent, oldest first. With `staleAfterMs`
   * (several processes), only those abandoned that long: another live
   * process may still be sending the fresher ones.
   */
  unsent(opts: { limit?: number; staleAfterMs?: number } = {}): Promise<DeliveryRecord[]> {
    const limit = opts.limit ?? 1000;
    const q = this.db.q.selectFrom("OutboundDelivery").select(COLUMNS).orderBy("createdAt", "asc").orderBy("part", "asc").limit(limit);
    if (!opts.staleAfterMs) return this.db.query("unsent", q.where("status", "in", ["pending", "sending"]));
    const stale = new Date(Date.now() - opts.staleAfterMs);
    return this.db.query(
      "unsent-stale",
      q.where((eb) =>
        eb.or([
          eb.and([eb("status", "=", "pending"), eb("createdAt", "<", stale), eb.or([eb("claimedAt", "is", null), eb("claimedAt", "<", stale)])]),
          eb.and([eb("status", "=", "sending"), eb("claimedAt", "<", stale)]),
        ]),
      ),
    );
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
    const [r] = await this.db.query("find-delivery", this.db.q.selectFrom("OutboundDelivery").select(COLUMNS).where("id", "=", id));
    return r ?? null;
  }

  /** Deletes up to `limit` settled replies (sent, failed, expired) created before `before`; unsent ones are kept. */
  async prune(before: Date, limit: number): Promise<number> {
    return pruneSettled(this.db, "prune-deliveries", "OutboundDelivery", ["sent", "failed", "expired"], before, limit);
  }
}
