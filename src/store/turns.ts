import { randomUUID } from "node:crypto";
import type { Database } from "./db.js";
import type { DeliveryStore } from "./deliveries.js";
import type { QueryBuilder, Sql } from "./sql.js";
import type { NewMessage } from "./transcript.js";

export interface TurnCommit {
  sessionId: string;
  inboundIds: string[];
  messages: NewMessage[];
  turnIncrement: number;
  deliveries: Array<{ platform: string; botId: string; address: string; text: string; expiresAt: Date }>;
}

export type TranscriptOutcome = "ok" | "archived" | "missing" | "skipped" | "duplicate";

/**
 * Commits everything one handled inbound event changes in ONE transaction:
 * transcript messages (refused for an archived session), the turn count,
 * the pending deliveries, and the inbound records marked done. A crash
 * before it replays the event; a crash after it only sends the deliveries.
 * Hot path: raw statements (see sql.ts), one round of each per turn.
 */
export class TurnStore {
  /** With `deliveries`, the pending records it writes are handed to the sender directly (no read back). */
  constructor(
    readonly db: Database,
    private readonly deliveries?: DeliveryStore,
  ) {}

  async commit(t: TurnCommit): Promise<{ transcript: TranscriptOutcome; deliveryIds: string[] }> {
    const deliveryIds = t.deliveries.map(() => randomUUID());
    const now = new Date();
    const transcript = await this.db.sqlTransaction("commit-turn", (s) => commitIn(this.db.q, s, t, deliveryIds, now));
    if (transcript === "duplicate") return { transcript, deliveryIds: [] };
    this.deliveries?.remember(
      t.deliveries.map((d, i) => ({
        id: deliveryIds[i]!, inboundId: t.inboundIds[0] ?? null, sessionId: t.sessionId, platform: d.platform, botId: d.botId, address: d.address, part: i, text: d.text,
        status: "pending", attempts: 0, platformMessageId: null, lastError: null, createdAt: now, expiresAt: d.expiresAt, sentAt: null,
      })),
    );
    return { transcript, deliveryIds };
  }
}

async function commitIn(q: QueryBuilder, s: Sql, t: TurnCommit, deliveryIds: string[], now: Date): Promise<TranscriptOutcome> {
  // The inbound records first: when none of them was still unhandled, this commit already landed
  // (a retry after a lost acknowledgement) or another process handled them. Writing nothing more
  // keeps a retried commit from answering twice.
  if (t.inboundIds.length) {
    const marked = await s.run(
      q.updateTable("InboundEvent").set({ status: "done", processedAt: now, sessionId: t.sessionId }).where("id", "in", t.inboundIds).where("status", "=", "received"),
    );
    if (marked === 0) return "duplicate";
  }
  if (t.deliveries.length) {
    await s.run(
      q.insertInto("OutboundDelivery").values(
        t.deliveries.map((d, i) => ({
          id: deliveryIds[i]!, inboundId: t.inboundIds[0] ?? null, sessionId: t.sessionId, platform: d.platform, botId: d.botId, address: d.address, part: i, text: d.text,
          status: "pending", attempts: 0, createdAt: now, expiresAt: d.expiresAt,
        })),
      ),
    );
  }
  if (!t.messages.length && !t.turnIncrement) return "skipped";
  const touched = await s.run(
    q.updateTable("Session").set((eb) => ({ lastActive: now, turnCount: eb("turnCount", "+", t.turnIncrement) })).where("id", "=", t.sessionId).where("archived", "=", false),
  );
  if (touched !== 1) {
    const found = await s.all(q.selectFrom("Session").select("id").where("id", "=", t.sessionId));
    return found.length ? "archived" : "missing";
  }
  if (t.messages.length) {
    const [last] = await s.all(q.selectFrom("Message").select((eb) => eb.fn.max("seq").as("seq")).where("sessionId", "=", t.sessionId));
    let seq = Number(last?.seq ?? 0);
    await s.run(
      q.insertInto("Message").values(
        t.messages.map((m) => ({ sessionId: t.sessionId, seq: ++seq, role: m.role, content: m.content, meta: m.meta ?? null, createdAt: m.createdAt ?? now, sourceId: m.sourceId ?? null })),
      ),
    );
  }
  return "ok";
}
