import { randomUUID } from "node:crypto";
import type { Database } from "./db.js";
import { toDate, toDateOrNull } from "./sql.js";

export type InboundStatus = "received" | "done" | "expired" | "ignored";

export interface InboundRecord {
  id: string;
  platform: string;
  botId: string;
  eventId: string;
  status: string;
  envelope: string;
  occurredAt: Date;
  receivedAt: Date;
  processedAt: Date | null;
  sessionId: string | null;
  note: string | null;
  /** The recorded order (a database sequence): replay and the shared-mode drain go by it. */
  seq: number;
}

const COLUMNS = `"id","platform","botId","eventId","status","envelope","occurredAt","receivedAt","processedAt","sessionId","note","conversation","seq"`;

function inboundOf(r: Record<string, unknown>): InboundRecord {
  return {
    ...(r as unknown as InboundRecord),
    occurredAt: toDate(r.occurredAt),
    receivedAt: toDate(r.receivedAt),
    processedAt: toDateOrNull(r.processedAt),
    seq: Number(r.seq),
  };
}

/**
 * The next recorded-order value, drawn inside the INSERT. PostgreSQL: a
 * sequence, so processes on several hosts share one order whatever their
 * clocks say. SQLite: one past the largest, which is safe because every
 * write holds the database's one write lock (BEGIN IMMEDIATE).
 */
const NEXT_SEQ = {
  postgresql: `nextval('"InboundEvent_seq_source"')`,
  sqlite: `(SELECT COALESCE(MAX("seq"), 0) + 1 FROM "InboundEvent")`,
} as const;

/**
 * Inbound events, recorded before they are acknowledged or processed. The
 * unique key platform + bot + event id turns every platform retry, Socket
 * Mode redelivery or restart replay into a dropped duplicate.
 */
export class InboundStore {
  /** `now` is the recording time written to receivedAt (tests skew it: order never depends on it). */
  constructor(
    readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * Records an event. Returns its id, or "duplicate" when the key was seen
   * before. An expired event is recorded as expired (so its redeliveries are
   * duplicates too).
   */
  async record(e: {
    platform: string;
    botId: string;
    eventId: string;
    envelope: string;
    occurredAt: Date;
    conversation?: string;
    status?: InboundStatus;
    note?: string;
  }): Promise<{ id: string } | "duplicate"> {
    const id = randomUUID();
    const now = this.now();
    const status = e.status ?? "received";
    // ON CONFLICT on the unique platform + bot + event id: a redelivery changes nothing.
    const inserted = await this.db.exec(
      "record-inbound",
      `INSERT INTO "InboundEvent" ("id","platform","botId","eventId","status","envelope","occurredAt","receivedAt","processedAt","note","conversation","seq") VALUES (?,?,?,?,?,?,?,?,?,?,?,${NEXT_SEQ[this.db.provider]}) ON CONFLICT DO NOTHING`,
      [id, e.platform, e.botId, e.eventId, status, e.envelope, e.occurredAt, now, status !== "received" ? now : null, e.note ?? null, e.conversation ?? ""],
    );
    return inserted === 1 ? { id } : "duplicate";
  }

  async mark(id: string, status: InboundStatus, note?: string): Promise<void> {
    await this.db.exec(
      "mark-inbound",
      `UPDATE "InboundEvent" SET "status" = ?, "processedAt" = ?, "note" = COALESCE(?, "note") WHERE "id" = ? AND "status" = ?`,
      [status, this.now(), note ?? null, id, "received"],
    );
  }

  /**
   * One page of the accepted events not yet handled, in recorded order,
   * after the `after` sequence value (replayed at start: page until empty).
   */
  async unhandled(limit = 1000, after = 0): Promise<InboundRecord[]> {
    const rows = await this.db.query<Record<string, unknown>>(
      "unhandled-inbound",
      `SELECT ${COLUMNS} FROM "InboundEvent" WHERE "status" = ? AND "seq" > ? ORDER BY "seq" ASC, "id" ASC LIMIT ?`,
      ["received", after, limit],
    );
    return rows.map(inboundOf);
  }

  /** A conversation's unhandled events, in recorded order. */
  async receivedIn(conversation: string, limit = 50): Promise<InboundRecord[]> {
    const rows = await this.db.query<Record<string, unknown>>(
      "conversation-inbound",
      `SELECT ${COLUMNS} FROM "InboundEvent" WHERE "conversation" = ? AND "status" = ? ORDER BY "seq" ASC, "id" ASC LIMIT ?`,
      [conversation, "received", limit],
    );
    return rows.map(inboundOf);
  }

  /** Conversations with unhandled events recorded before `before`. */
  async conversationsWaiting(before: Date, limit = 500): Promise<string[]> {
    const rows = await this.db.query<{ conversation: string }>(
      "waiting-conversations",
      `SELECT DISTINCT "conversation" FROM "InboundEvent" WHERE "status" = ? AND "receivedAt" < ? LIMIT ?`,
      ["received", before, limit],
    );
    return rows.map((r) => r.conversation);
  }

  async find(id: string): Promise<InboundRecord | null> {
    const [r] = await this.db.query<Record<string, unknown>>("find-inbound", `SELECT ${COLUMNS} FROM "InboundEvent" WHERE "id" = ?`, [id]);
    return r ? inboundOf(r) : null;
  }

  /**
   * Deletes up to `limit` handled events received before `before` (one
   * short statement; the caller loops). Unhandled events are kept whatever
   * their age: they are replayed, or expired, first.
   */
  async prune(before: Date, limit: number): Promise<number> {
    return this.db.exec(
      "prune-inbound",
      `DELETE FROM "InboundEvent" WHERE "id" IN (SELECT "id" FROM "InboundEvent" WHERE "status" IN (?, ?, ?) AND "receivedAt" < ? LIMIT ?)`,
      ["done", "expired", "ignored", before, limit],
    );
  }
}
