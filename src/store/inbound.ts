import { randomUUID } from "node:crypto";
import type { Database } from "./db.js";

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
}

/**
 * Inbound events, recorded before they are acknowledged or processed. The
 * unique key platform + bot + event id turns every platform retry, Socket
 * Mode redelivery or restart replay into a dropped duplicate.
 */
export class InboundStore {
  constructor(readonly db: Database) {}

  /**
   * Records an event. Returns its id, or "duplicate" when the key was seen
   * before. An expired event is recorded as expired (so its redeliveries are
   * duplicates too).
   */
  async record(e: { platform: string; botId: string; eventId: string; envelope: string; occurredAt: Date; conversation?: string; status?: InboundStatus; note?: string }): Promise<{ id: string } | "duplicate"> {
    const id = randomUUID();
    const now = new Date();
    const status = e.status ?? "received";
    // ON CONFLICT on the unique platform + bot + event id: a redelivery changes nothing.
    const inserted = await this.db.exec(
      "record-inbound",
      `INSERT INTO "InboundEvent" ("id","platform","botId","eventId","status","envelope","occurredAt","receivedAt","processedAt","note","conversation") VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING`,
      [id, e.platform, e.botId, e.eventId, status, e.envelope, e.occurredAt, now, status !== "received" ? now : null, e.note ?? null, e.conversation ?? ""],
    );
    return inserted === 1 ? { id } : "duplicate";
  }

  async mark(id: string, status: InboundStatus, note?: string): Promise<void> {
    await this.db.exec(
      "mark-inbound",
      `UPDATE "InboundEvent" SET "status" = ?, "processedAt" = ?, "note" = COALESCE(?, "note") WHERE "id" = ? AND "status" = ?`,
      [status, new Date(), note ?? null, id, "received"],
    );
  }

  /** Accepted events not yet handled, oldest first (replayed at start). */
  unhandled(limit = 1000): Promise<InboundRecord[]> {
    return this.db.read((c) => c.inboundEvent.findMany({ where: { status: "received" }, orderBy: [{ receivedAt: "asc" }, { id: "asc" }], take: limit }));
  }

  /** A conversation's unhandled events, oldest first. */
  receivedIn(conversation: string, limit = 50): Promise<InboundRecord[]> {
    return this.db.read((c) => c.inboundEvent.findMany({ where: { conversation, status: "received" }, orderBy: [{ receivedAt: "asc" }, { id: "asc" }], take: limit }));
  }

  /** Conversations with unhandled events recorded before `before`. */
  async conversationsWaiting(before: Date, limit = 500): Promise<string[]> {
    const rows = await this.db.read((c) =>
      c.inboundEvent.findMany({ where: { status: "received", receivedAt: { lt: before } }, distinct: ["conversation"], select: { conversation: true }, take: limit }),
    );
    return rows.map((r) => r.conversation);
  }

  find(id: string): Promise<InboundRecord | null> {
    return this.db.read((c) => c.inboundEvent.findUnique({ where: { id } }));
  }
}
