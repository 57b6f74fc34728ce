import { randomUUID } from "node:crypto";
import type { Database } from "./db.js";
import type { NewMessage } from "./transcript.js";

export interface TurnCommit {
  sessionId: string;
  inboundIds: string[];
  messages: NewMessage[];
  turnIncrement: number;
  deliveries: Array<{ platform: string; botId: string; address: string; text: string; expiresAt: Date }>;
}

/**
 * Commits everything one handled inbound event changes in ONE transaction:
 * transcript messages (refused for an archived session), the turn count,
 * the pending deliveries, and the inbound records marked done. A crash
 * before it replays the event; a crash after it only sends the deliveries.
 */
export class TurnStore {
  constructor(readonly db: Database) {}

  commit(t: TurnCommit): Promise<{ transcript: "ok" | "archived" | "missing" | "skipped"; deliveryIds: string[] }> {
    return this.db.transaction("commit-turn", async (tx) => {
      const now = new Date();
      const deliveryIds = t.deliveries.map(() => randomUUID());
      // Deliveries first: a write as the first statement takes SQLite's write lock up front.
      if (t.deliveries.length) {
        await tx.outboundDelivery.createMany({
          data: t.deliveries.map((d, i) => ({
            id: deliveryIds[i]!, inboundId: t.inboundIds[0] ?? null, sessionId: t.sessionId, platform: d.platform, botId: d.botId,
            address: d.address, part: i, text: d.text, status: "pending", createdAt: now, expiresAt: d.expiresAt,
          })),
        });
      }
      if (t.inboundIds.length) {
        await tx.inboundEvent.updateMany({ where: { id: { in: t.inboundIds }, status: "received" }, data: { status: "done", processedAt: now, sessionId: t.sessionId } });
      }
      let transcript: "ok" | "archived" | "missing" | "skipped" = "skipped";
      if (t.messages.length || t.turnIncrement) {
        const touched = await tx.session.updateMany({
          where: { id: t.sessionId, archived: false },
          data: { lastActive: now, ...(t.turnIncrement ? { turnCount: { increment: t.turnIncrement } } : {}) },
        });
        if (touched.count === 1) {
          const last = await tx.message.findFirst({ where: { sessionId: t.sessionId }, orderBy: { seq: "desc" }, select: { seq: true } });
          let seq = last?.seq ?? 0;
          if (t.messages.length) {
            await tx.message.createMany({ data: t.messages.map((m) => ({ sessionId: t.sessionId, seq: ++seq, role: m.role, content: m.content, meta: m.meta ?? null, createdAt: m.createdAt ?? now })) });
          }
          transcript = "ok";
        } else {
          transcript = (await tx.session.findUnique({ where: { id: t.sessionId }, select: { id: true } })) ? "archived" : "missing";
        }
      }
      return { transcript, deliveryIds };
    });
  }
}
