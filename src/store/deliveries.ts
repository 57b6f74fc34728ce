import { randomUUID } from "node:crypto";
import type { Selectable } from "kysely";
import { setBounded } from "../bounded.js";
import { codecs, type ReplyAddress } from "./codecs.js";
import type { Database } from "./db.js";
import { inSpan, tracing } from "../telemetry/index.js";
import { SpanKind } from "@opentelemetry/api";
import { pruneSettled } from "./retention.js";
import type { DB, Sql } from "./sql.js";
import { prepare, type Dialect, type Param } from "./prepared.js";

export type DeliveryStatus = "pending" | "sending" | "sent" | "failed" | "expired";

/**
 * An outbound reply's row (its claim columns, owner and claimedAt, stay in
 * the store), its address typed: decoded once when read, never on the live
 * path (the rows a commit writes are handed on as written).
 */
export type DeliveryRecord = Omit<Selectable<DB["OutboundDelivery"]>, "owner" | "claimedAt" | "address"> & { address: ReplyAddress };

/** What one reply of a commit says: where it goes and its text. */
export interface NewReply {
  address: ReplyAddress;
  text: string;
}

/** The pending rows one commit writes for its replies, in order (`part`), as they are stored. */
export function pendingDeliveries(
  of: { sessionId: string; inboundId: string | null; createdAt: Date; expiresAt: Date },
  replies: NewReply[],
): DeliveryRecord[] {
  return replies.map((r, part) => ({
    id: randomUUID(),
    inboundId: of.inboundId,
    sessionId: of.sessionId,
    platform: r.address.platform,
    botId: r.address.botId,
    address: r.address,
    part,
    text: r.text,
    status: "pending",
    attempts: 0,
    platformMessageId: null,
    lastError: null,
    createdAt: of.createdAt,
    expiresAt: of.expiresAt,
    sentAt: null,
  }));
}

type InsertRow = Pick<
  Selectable<DB["OutboundDelivery"]>,
  "id" | "inboundId" | "sessionId" | "platform" | "botId" | "address" | "part" | "text" | "createdAt" | "expiresAt"
>;
const INSERT = prepare((b, p: Param<{ pending: string; zero: number }, InsertRow>, { rows }) =>
  b.insertInto("OutboundDelivery").values(
    Array.from({ length: rows }, (_, i) => ({
      id: p.row(i, "id"),
      inboundId: p.row(i, "inboundId"),
      sessionId: p.row(i, "sessionId"),
      platform: p.row(i, "platform"),
      botId: p.row(i, "botId"),
      address: p.row(i, "address"),
      part: p.row(i, "part"),
      text: p.row(i, "text"),
      status: p("pending"),
      attempts: p("zero"),
      createdAt: p.row(i, "createdAt"),
      expiresAt: p.row(i, "expiresAt"),
    })),
  ),
);

/** Writes pending replies inside the caller's transaction `s` (their address through its column's codec). */
export async function insertDeliveries(db: Dialect, s: Sql, rows: DeliveryRecord[]): Promise<void> {
  if (rows.length) await s.run(INSERT.bind(db, { pending: "pending", zero: 0 }, rows.map(insertRow)));
}

const insertRow = (d: DeliveryRecord): InsertRow => ({
  id: d.id,
  inboundId: d.inboundId,
  sessionId: d.sessionId,
  platform: d.platform,
  botId: d.botId,
  address: codecs.deliveryAddress.encode(d.address),
  part: d.part,
  text: d.text,
  createdAt: d.createdAt,
  expiresAt: d.expiresAt,
});

/** A row as read: its address decoded (a row whose address is unreadable is a StoreError Unreadable naming it). */
const decoded = (r: Omit<DeliveryRecord, "address"> & { address: string }): DeliveryRecord => ({
  ...r,
  address: codecs.deliveryAddress.decode(r.address, r.id),
});

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
  /** Rows this store wrote in a transaction that committed, for the sender to take without a read back (bounded; the oldest goes first). */
  readonly #fresh = new Map<string, DeliveryRecord>();

  constructor(readonly db: Database) {}

  /**
   * One transaction `tx` that writes pending replies through the `write` it
   * is given (or inserts them itself and says so through `wrote`). Once it committed, the rows it wrote are what `take` answers
   * (once each): this process sends them next, as written. A transaction run
   * again (a retry, a group commit's re-run) starts its rows again.
   */
  async transaction<T>(
    op: string,
    tx: (s: Sql, write: (rows: DeliveryRecord[]) => Promise<void>, wrote: (rows: DeliveryRecord[]) => void) => Promise<T>,
  ): Promise<T> {
    let written: DeliveryRecord[] = [];
    // One span per commit (src/telemetry), its statements and retries inside it, never one per statement.
    const attributes = tracing() ? { "db.system.name": this.db.provider, "db.operation.name": "COMMIT", "switchboard.db.transaction": op } : undefined;
    const r = await inSpan(`COMMIT ${op}`, { kind: SpanKind.CLIENT, ...(attributes && { attributes }) }, (span) =>
      this.db
        .sqlTransaction(op, (s) => {
          written = [];
          return tx(
            s,
            async (rows) => {
              await insertDeliveries(this.db, s, rows);
              written.push(...rows);
            },
            // Rows the transaction inserted with a statement of its own (turns.ts on PostgreSQL).
            (rows) => void written.push(...rows),
          );
        })
        .finally(() => span.setAttribute("switchboard.db.deliveries", written.length)),
    );
    for (const d of written) setBounded(this.#fresh, d.id, d, 10_000);
    return r;
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
  async unsent(opts: { limit?: number; staleAfterMs?: number } = {}): Promise<DeliveryRecord[]> {
    const limit = opts.limit ?? 1000;
    const q = this.db.q.selectFrom("OutboundDelivery").select(COLUMNS).orderBy("createdAt", "asc").orderBy("part", "asc").limit(limit);
    if (!opts.staleAfterMs) return (await this.db.query("unsent", q.where("status", "in", ["pending", "sending"]))).map(decoded);
    const stale = new Date(Date.now() - opts.staleAfterMs);
    const rows = await this.db.query(
      "unsent-stale",
      q.where((eb) =>
        eb.or([
          eb.and([eb("status", "=", "pending"), eb("createdAt", "<", stale), eb.or([eb("claimedAt", "is", null), eb("claimedAt", "<", stale)])]),
          eb.and([eb("status", "=", "sending"), eb("claimedAt", "<", stale)]),
        ]),
      ),
    );
    return rows.map(decoded);
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
    return r ? decoded(r) : null;
  }

  /** Deletes up to `limit` settled replies (sent, failed, expired) created before `before`; unsent ones are kept. */
  async prune(before: Date, limit: number): Promise<number> {
    return pruneSettled(this.db, "prune-deliveries", "OutboundDelivery", ["sent", "failed", "expired"], before, limit);
  }
}
