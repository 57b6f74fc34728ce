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
      this.db.q
        .insertInto("ConversationLease")
        .values({ key, owner, expiresAt })
        .onConflict((oc) =>
          oc
            .column("key")
            .doUpdateSet((eb) => ({ owner: eb.ref("excluded.owner"), expiresAt: eb.ref("excluded.expiresAt") }))
            .where((eb) => eb.or([eb("ConversationLease.owner", "=", owner), eb("ConversationLease.expiresAt", "<", now)])),
        ),
    );
    return n === 1;
  }

  /** Extends our lease; false if it was lost (expired and taken). */
  async renew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const n = await this.db.exec(
      "lease-renew",
      this.db.q
        .updateTable("ConversationLease")
        .set({ expiresAt: new Date(Date.now() + ttlMs) })
        .where("key", "=", key)
        .where("owner", "=", owner),
    );
    return n === 1;
  }

  async release(key: string, owner: string): Promise<void> {
    await this.db.exec("lease-release", this.db.q.deleteFrom("ConversationLease").where("key", "=", key).where("owner", "=", owner));
  }
}
