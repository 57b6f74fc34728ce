import type { Database } from "./db.js";
import { isUniqueViolation } from "./errors.js";

export interface PairingRecord {
  code: string;
  platform: string;
  botId: string;
  channel: string;
  senderId: string;
  displayName: string | null;
  status: string;
  createdAt: Date;
  expiresAt: Date;
  decidedAt: Date | null;
}

/** DM access: pairing requests and the grants they turn into. */
export class AccessStore {
  constructor(readonly db: Database) {}

  async isGranted(platform: string, botId: string, senderId: string): Promise<boolean> {
    // Every DM under a pairing or allowlist policy asks this: raw SQL on the primary key.
    const rows = await this.db.query("access-granted", `SELECT 1 AS "ok" FROM "AccessGrant" WHERE "platform" = ? AND "botId" = ? AND "senderId" = ?`, [platform, botId, senderId]);
    return rows.length > 0;
  }

  async grant(platform: string, botId: string, senderId: string, source: string): Promise<void> {
    try {
      await this.db.write((c) => c.accessGrant.create({ data: { platform, botId, senderId, source } }), "accessGrant-create");
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
    }
  }

  /** The sender's live (pending, unexpired) request on this channel, if any. */
  livePending(channel: string, senderId: string, now: Date): Promise<PairingRecord | null> {
    return this.db.read((c) => c.pairingRequest.findFirst({ where: { channel, senderId, status: "pending", expiresAt: { gt: now } } }), "pairingRequest-findFirst");
  }

  /**
   * Creates a pending request unless the channel already has `cap` live ones.
   * The count and the insert are one transaction, so concurrent senders
   * cannot exceed the cap.
   */
  createPending(rec: Omit<PairingRecord, "status" | "decidedAt" | "createdAt">, cap: number, now: Date): Promise<PairingRecord | "full"> {
    return this.db.transaction("pairing-create", async (tx) => {
      // PostgreSQL: serialize creators per channel, or concurrent senders could each see room under the cap.
      // (SQLite: the first statement below is a write, which already takes the database's one write lock.)
      if (this.db.provider === "postgresql") await tx.$queryRawUnsafe("SELECT pg_advisory_xact_lock(hashtext($1))::text", rec.channel);
      await tx.pairingRequest.updateMany({ where: { channel: rec.channel, status: "pending", expiresAt: { lte: now } }, data: { status: "expired" } });
      const live = await tx.pairingRequest.count({ where: { channel: rec.channel, status: "pending" } });
      if (live >= cap) return "full" as const;
      return tx.pairingRequest.create({ data: { ...rec, status: "pending", createdAt: now } });
    });
  }

  listPending(now: Date): Promise<PairingRecord[]> {
    return this.db.read((c) => c.pairingRequest.findMany({ where: { status: "pending", expiresAt: { gt: now } }, orderBy: { createdAt: "asc" } }), "pairingRequest-findMany");
  }

  find(code: string): Promise<PairingRecord | null> {
    return this.db.read((c) => c.pairingRequest.findUnique({ where: { code } }), "pairingRequest-findUnique");
  }

  /** Approves a live code and grants its sender, atomically. */
  approve(code: string, now: Date): Promise<PairingRecord | "expired" | "missing" | "decided"> {
    return this.db.transaction("pairing-approve", async (tx) => {
      const r = await tx.pairingRequest.findUnique({ where: { code } });
      if (!r) return "missing" as const;
      if (r.status !== "pending") return "decided" as const;
      if (r.expiresAt <= now) {
        await tx.pairingRequest.update({ where: { code }, data: { status: "expired" } });
        return "expired" as const;
      }
      const done = await tx.pairingRequest.update({ where: { code }, data: { status: "approved", decidedAt: now } });
      const where = { platform_botId_senderId: { platform: r.platform, botId: r.botId, senderId: r.senderId } };
      await tx.accessGrant.upsert({ where, create: { platform: r.platform, botId: r.botId, senderId: r.senderId, source: `pairing:${code}` }, update: {} });
      return done;
    });
  }
}
