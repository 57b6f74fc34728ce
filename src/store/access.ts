import type { Database } from "./db.js";
import { isUniqueViolation } from "./errors.js";
import type { Selectable } from "kysely";
import type { DB } from "./sql.js";

export type PairingRecord = Selectable<DB["PairingRequest"]>;

/** DM access: pairing requests and the grants they turn into. */
export class AccessStore {
  constructor(readonly db: Database) {}

  async isGranted(platform: string, botId: string, senderId: string): Promise<boolean> {
    // Every DM under a pairing or allowlist policy asks this: on the primary key.
    const rows = await this.db.query(
      "access-granted",
      this.db.q
        .selectFrom("AccessGrant")
        .select((eb) => eb.lit(1).as("ok"))
        .where("platform", "=", platform)
        .where("botId", "=", botId)
        .where("senderId", "=", senderId),
    );
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
    return this.db.read(
      (c) => c.pairingRequest.findFirst({ where: { channel, senderId, status: "pending", expiresAt: { gt: now } } }),
      "pairingRequest-findFirst",
    );
  }

  /**
   * Creates a pending request for a sender who has none live. The channel
   * keeps at most `cap` pending: a new request replaces the oldest one
   * (status "replaced"), so strangers filling the slots cannot lock everyone
   * else out. A sender whose last request is younger than `minIntervalMs`
   * gets "throttled" instead, so two senders cannot keep evicting each other.
   * Checks and writes are one transaction, serialized per channel.
   */
  createPending(
    rec: Omit<PairingRecord, "status" | "decidedAt" | "createdAt">,
    cap: number,
    now: Date,
    minIntervalMs = 0,
  ): Promise<{ record: PairingRecord; reused: boolean; replaced?: string } | { throttledUntil: Date }> {
    return this.db.transaction("pairing-create", async (tx) => {
      // PostgreSQL: serialize creators per channel, or concurrent senders could each see room under the cap.
      // (SQLite: the first statement below is a write, which already takes the database's one write lock.)
      if (this.db.provider === "postgresql") await tx.$queryRawUnsafe("SELECT pg_advisory_xact_lock(hashtext($1))::text", rec.channel);
      await tx.pairingRequest.updateMany({ where: { channel: rec.channel, status: "pending", expiresAt: { lte: now } }, data: { status: "expired" } });
      const mine = await tx.pairingRequest.findFirst({ where: { channel: rec.channel, senderId: rec.senderId, status: "pending" } });
      if (mine) return { record: mine, reused: true };
      if (minIntervalMs > 0) {
        const last = await tx.pairingRequest.findFirst({
          where: { channel: rec.channel, senderId: rec.senderId, status: { not: "approved" } },
          orderBy: { createdAt: "desc" },
        });
        if (last && now.getTime() - last.createdAt.getTime() < minIntervalMs) return { throttledUntil: new Date(last.createdAt.getTime() + minIntervalMs) };
      }
      const live = await tx.pairingRequest.findMany({
        where: { channel: rec.channel, status: "pending" },
        orderBy: [{ createdAt: "asc" }, { code: "asc" }],
        select: { code: true },
      });
      let replaced: string | undefined;
      // Normally at most one over; a lowered cap trims the rest too.
      for (const old of live.slice(0, Math.max(0, live.length - cap + 1))) {
        await tx.pairingRequest.update({ where: { code: old.code }, data: { status: "replaced", decidedAt: now } });
        replaced ??= old.code;
      }
      const record = await tx.pairingRequest.create({ data: { ...rec, status: "pending", createdAt: now } });
      return { record, reused: false, ...(replaced !== undefined && { replaced }) };
    });
  }

  /** `switchboard pairing list` reads this. */
  listPending(now: Date): Promise<PairingRecord[]> {
    return this.db.query(
      "pairing-pending",
      this.db.q.selectFrom("PairingRequest").selectAll().where("status", "=", "pending").where("expiresAt", ">", now).orderBy("createdAt", "asc"),
    );
  }

  find(code: string): Promise<PairingRecord | null> {
    return this.db.read((c) => c.pairingRequest.findUnique({ where: { code } }), "pairingRequest-findUnique");
  }

  /** Approves a live code and grants its sender, atomically. */
  approve(code: string, now: Date): Promise<PairingRecord | "expired" | "missing" | "decided" | "replaced"> {
    return this.db.transaction("pairing-approve", async (tx) => {
      const r = await tx.pairingRequest.findUnique({ where: { code } });
      if (!r) return "missing" as const;
      if (r.status === "replaced") return "replaced" as const;
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
