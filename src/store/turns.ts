import { randomUUID } from "node:crypto";
import type { Database } from "./db.js";
import type { DeliveryStore } from "./deliveries.js";
import type { Sql, SqlValue } from "./sql.js";
import type { NewMessage } from "./transcript.js";

export interface TurnCommit {
  sessionId: string;
  inboundIds: string[];
  messages: NewMessage[];
  turnIncrement: number;
  deliveries: Array<{ platform: string; botId: string; address: string; text: string; expiresAt: Date }>;
}

export type TranscriptOutcome = "ok" | "archived" | "missing" | "skipped" | "duplicate";

const marks = (n: number) => Array.from({ length: n }, () => "?").join(",");
const rows = (n: number, width: number) => Array.from({ length: n }, () => `(${marks(width)})`).join(",");

const DELIVERY_COLUMNS = `"id","inboundId","sessionId","platform","botId","address","part","text","status","attempts","createdAt","expiresAt"`;
const MESSAGE_COLUMNS = `"sessionId","seq","role","content","meta","createdAt"`;

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
    const transcript = await this.db.sqlTransaction("commit-turn", (q) => commitIn(q, t, deliveryIds, now));
    if (transcript === "duplicate") return { transcript, deliveryIds: [] };
    this.deliveries?.remember(
      t.deliveries.map((d, i) => ({
        id: deliveryIds[i]!,
        inboundId: t.inboundIds[0] ?? null,
        sessionId: t.sessionId,
        platform: d.platform,
        botId: d.botId,
        address: d.address,
        part: i,
        text: d.text,
        status: "pending",
        attempts: 0,
        platformMessageId: null,
        lastError: null,
        createdAt: now,
        expiresAt: d.expiresAt,
        sentAt: null,
      })),
    );
    return { transcript, deliveryIds };
  }
}

async function commitIn(q: Sql, t: TurnCommit, deliveryIds: string[], now: Date): Promise<TranscriptOutcome> {
  // The inbound records first: when none of them was still unhandled, this commit already landed
  // (a retry after a lost acknowledgement) or another process handled them. Writing nothing more
  // keeps a retried commit from answering twice.
  if (t.inboundIds.length) {
    const marked = await q.run(
      `UPDATE "InboundEvent" SET "status" = ?, "processedAt" = ?, "sessionId" = ? WHERE "id" IN (${marks(t.inboundIds.length)}) AND "status" = ?`,
      ["done", now, t.sessionId, ...t.inboundIds, "received"],
    );
    if (marked === 0) return "duplicate";
  }
  if (t.deliveries.length) {
    const params: SqlValue[] = [];
    t.deliveries.forEach((d, i) => {
      params.push(deliveryIds[i], t.inboundIds[0] ?? null, t.sessionId, d.platform, d.botId, d.address, i, d.text, "pending", 0, now, d.expiresAt);
    });
    await q.run(`INSERT INTO "OutboundDelivery" (${DELIVERY_COLUMNS}) VALUES ${rows(t.deliveries.length, 12)}`, params);
  }
  if (!t.messages.length && !t.turnIncrement) return "skipped";
  const touched = await q.run(`UPDATE "Session" SET "lastActive" = ?, "turnCount" = "turnCount" + ? WHERE "id" = ? AND "archived" = ?`, [
    now,
    t.turnIncrement,
    t.sessionId,
    false,
  ]);
  if (touched !== 1) {
    const found = await q.all(`SELECT "id" FROM "Session" WHERE "id" = ?`, [t.sessionId]);
    return found.length ? "archived" : "missing";
  }
  if (t.messages.length) {
    const [last] = await q.all<{ seq: number | null }>(`SELECT MAX("seq") AS "seq" FROM "Message" WHERE "sessionId" = ?`, [t.sessionId]);
    let seq = Number(last?.seq ?? 0);
    const params: SqlValue[] = [];
    for (const m of t.messages) params.push(t.sessionId, ++seq, m.role, m.content, m.meta ?? null, m.createdAt ?? now, m.sourceId ?? null);
    await q.run(`INSERT INTO "Message" (${MESSAGE_COLUMNS},"sourceId") VALUES ${rows(t.messages.length, 7)}`, params);
  }
  return "ok";
}
