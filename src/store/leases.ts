import type { Database } from "./db.js";

/**
 * Conversation leases: with several gateway processes on one database, a
 * process handles a conversation's events only while it holds its lease, so
 * per-conversation order comes from the database, not from process memory.
 * A lease expires unless renewed, so a crashed holder's conversations are
 * taken over.
 */
export class LeaseStore {
  constructor(readonly db: Database) {}

  /** Takes the lease if it is free, expired, or already ours. */
  async acquire(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const now = new Date();
    const expiresAt = new Date(now.getTime() + ttlMs);
    // One conditional upsert: insert, or take over where the lease is ours or has expired.
    const n = await this.db.exec(
      "lease-acquire",
      `INSERT INTO "ConversationLease" ("key","owner","expiresAt") VALUES (?,?,?) ON CONFLICT ("key") DO UPDATE SET "owner" = excluded."owner", "expiresAt" = excluded."expiresAt" WHERE "ConversationLease"."owner" = ? OR "ConversationLease"."expiresAt" < ?`,
      [key, owner, expiresAt, owner, now],
    );
    return n === 1;
  }

  /** Extends our lease; false if it was lost (expired and taken). */
  async renew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const n = await this.db.exec("lease-renew", `UPDATE "ConversationLease" SET "expiresAt" = ? WHERE "key" = ? AND "owner" = ?`, [
      new Date(Date.now() + ttlMs),
      key,
      owner,
    ]);
    return n === 1;
  }

  async release(key: string, owner: string): Promise<void> {
    await this.db.exec("lease-release", `DELETE FROM "ConversationLease" WHERE "key" = ? AND "owner" = ?`, [key, owner]);
  }
}
