import type { Database } from "./db.js";
import { sql, type Selectable } from "kysely";
import type { DB } from "./sql.js";

export type PairingRecord = Selectable<DB["PairingRequest"]>;

/** A group an admin admitted (`/allowgroup` in it): platform, bot and the group's chat id. */
export interface GroupGrant {
  platform: string;
  botId: string;
  chatId: string;
  source: string;
  createdAt: Date;
}

/**
 * A group's grant lives in AccessGrant beside the senders', its subject
 * written `group:<chatId>`: no platform's user id has that form (Telegram's
 * are numbers, Discord's snowflakes, Slack's U…/W…), so a sender can never
 * match a group's grant, and no second table or migration is needed.
 */
const GROUP_SUBJECT = "group:";
const groupSubject = (chatId: string): string => `${GROUP_SUBJECT}${chatId}`;

/** DM and group access: pairing requests, the grants they turn into, and admitted groups. */
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
    // An existing grant stays as it is (its first source is kept).
    await this.db.exec(
      "accessGrant-create",
      this.db.q
        .insertInto("AccessGrant")
        .values({ platform, botId, senderId, source, createdAt: new Date() })
        .onConflict((oc) => oc.doNothing()),
    );
  }

  /** Whether an admin admitted this group (for this bot); every thread and topic in it is covered. */
  isGroupAdmitted(platform: string, botId: string, chatId: string): Promise<boolean> {
    return this.isGranted(platform, botId, groupSubject(chatId));
  }

  /** Admits a group; admitting it again keeps the first grant (its source says who admitted it). */
  admitGroup(platform: string, botId: string, chatId: string, source: string): Promise<void> {
    return this.grant(platform, botId, groupSubject(chatId), source);
  }

  /**
   * A group's admission follows it to a new chat id (a Telegram group upgraded to a supergroup), as its
   * sessions do (IdentityStore.moveGroup): else the upgraded group is silent, or left under
   * GROUP_UNADMITTED=leave. A grant the new id already has is kept. How many bots' grants moved.
   */
  moveGroupAdmission(platform: string, from: string, to: string): Promise<number> {
    return this.db.sqlTransaction("access-group-move", async (s) => {
      const rows = await s.all(this.db.q.selectFrom("AccessGrant").selectAll().where("platform", "=", platform).where("senderId", "=", groupSubject(from)));
      for (const r of rows)
        await s.run(
          this.db.q
            .insertInto("AccessGrant")
            .values({ ...r, senderId: groupSubject(to) })
            .onConflict((oc) => oc.doNothing()),
        );
      if (rows.length) await s.run(this.db.q.deleteFrom("AccessGrant").where("platform", "=", platform).where("senderId", "=", groupSubject(from)));
      return rows.length;
    });
  }

  /** Every admitted group, oldest first (`switchboard groups list`). */
  async listGroups(): Promise<GroupGrant[]> {
    const rows = await this.db.query(
      "access-groups",
      this.db.q.selectFrom("AccessGrant").selectAll().where("senderId", "like", `${GROUP_SUBJECT}%`).orderBy("createdAt", "asc"),
    );
    return rows.map((r) => ({
      platform: r.platform,
      botId: r.botId,
      chatId: r.senderId.slice(GROUP_SUBJECT.length),
      source: r.source,
      createdAt: r.createdAt,
    }));
  }

  /** Withdraws a group's admission (every bot of the platform that had it); how many grants went. */
  revokeGroup(platform: string, chatId: string): Promise<number> {
    return this.db.exec(
      "access-group-revoke",
      this.db.q.deleteFrom("AccessGrant").where("platform", "=", platform).where("senderId", "=", groupSubject(chatId)),
    );
  }

  /** The sender's live (pending, unexpired) request on this channel, if any. */
  async livePending(channel: string, senderId: string, now: Date): Promise<PairingRecord | null> {
    const [r] = await this.db.query(
      "pairing-live",
      this.db.q
        .selectFrom("PairingRequest")
        .selectAll()
        .where("channel", "=", channel)
        .where("senderId", "=", senderId)
        .where("status", "=", "pending")
        .where("expiresAt", ">", now)
        .limit(1),
    );
    return r ?? null;
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
    const q = this.db.q;
    return this.db.sqlTransaction("pairing-create", async (s) => {
      // PostgreSQL: serialize creators per channel, or concurrent senders could each see room under the cap.
      // (SQLite: the transaction begins IMMEDIATE, which already takes the database's one write lock.)
      if (this.db.provider === "postgresql") await s.all(q.selectNoFrom(sql<string>`pg_advisory_xact_lock(hashtext(${rec.channel}))::text`.as("locked")));
      await s.run(
        q
          .updateTable("PairingRequest")
          .set({ status: "expired" })
          .where("channel", "=", rec.channel)
          .where("status", "=", "pending")
          .where("expiresAt", "<=", now),
      );
      const [mine] = await s.all(
        q
          .selectFrom("PairingRequest")
          .selectAll()
          .where("channel", "=", rec.channel)
          .where("senderId", "=", rec.senderId)
          .where("status", "=", "pending")
          .limit(1),
      );
      if (mine) return { record: mine, reused: true };
      if (minIntervalMs > 0) {
        const [last] = await s.all(
          q
            .selectFrom("PairingRequest")
            .select("createdAt")
            .where("channel", "=", rec.channel)
            .where("senderId", "=", rec.senderId)
            .where("status", "!=", "approved")
            .orderBy("createdAt", "desc")
            .limit(1),
        );
        if (last && now.getTime() - last.createdAt.getTime() < minIntervalMs) return { throttledUntil: new Date(last.createdAt.getTime() + minIntervalMs) };
      }
      const live = await s.all(
        q
          .selectFrom("PairingRequest")
          .select("code")
          .where("channel", "=", rec.channel)
          .where("status", "=", "pending")
          .orderBy("createdAt", "asc")
          .orderBy("code", "asc"),
      );
      let replaced: string | undefined;
      // Normally at most one over; a lowered cap trims the rest too.
      for (const old of live.slice(0, Math.max(0, live.length - cap + 1))) {
        await s.run(q.updateTable("PairingRequest").set({ status: "replaced", decidedAt: now }).where("code", "=", old.code));
        replaced ??= old.code;
      }
      const record: PairingRecord = { ...rec, status: "pending", createdAt: now, decidedAt: null };
      await s.run(q.insertInto("PairingRequest").values(record));
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

  async find(code: string): Promise<PairingRecord | null> {
    const [r] = await this.db.query("pairing-find", this.db.q.selectFrom("PairingRequest").selectAll().where("code", "=", code));
    return r ?? null;
  }

  /** Approves a live code and grants its sender, atomically. */
  approve(code: string, now: Date, scope?: { platform: string; botId: string }): Promise<PairingRecord | "expired" | "missing" | "decided" | "replaced"> {
    const q = this.db.q;
    return this.db.sqlTransaction("pairing-approve", async (s) => {
      const [r] = await s.all(q.selectFrom("PairingRequest").selectAll().where("code", "=", code));
      // Out of scope reads as unknown: it says nothing of another bot's codes.
      if (!r || (scope && (r.platform !== scope.platform || r.botId !== scope.botId))) return "missing" as const;
      if (r.status === "replaced") return "replaced" as const;
      if (r.status !== "pending") return "decided" as const;
      if (r.expiresAt <= now) {
        await s.run(q.updateTable("PairingRequest").set({ status: "expired" }).where("code", "=", code));
        return "expired" as const;
      }
      await s.run(q.updateTable("PairingRequest").set({ status: "approved", decidedAt: now }).where("code", "=", code));
      await s.run(
        q
          .insertInto("AccessGrant")
          .values({ platform: r.platform, botId: r.botId, senderId: r.senderId, source: `pairing:${code}`, createdAt: now })
          .onConflict((oc) => oc.doNothing()),
      );
      return { ...r, status: "approved", decidedAt: now };
    });
  }
}
