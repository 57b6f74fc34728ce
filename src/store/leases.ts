import type { Database } from "./db.js";
import { isUniqueViolation } from "./errors.js";

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
    try {
      await this.db.write((c) => c.conversationLease.create({ data: { key, owner, expiresAt } }));
      return true;
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
    }
    const r = await this.db.write((c) =>
      c.conversationLease.updateMany({ where: { key, OR: [{ owner }, { expiresAt: { lt: now } }] }, data: { owner, expiresAt } }),
    );
    return r.count === 1;
  }

  /** Extends our lease; false if it was lost (expired and taken). */
  async renew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const r = await this.db.write((c) => c.conversationLease.updateMany({ where: { key, owner }, data: { expiresAt: new Date(Date.now() + ttlMs) } }));
    return r.count === 1;
  }

  async release(key: string, owner: string): Promise<void> {
    await this.db.write((c) => c.conversationLease.deleteMany({ where: { key, owner } }));
  }
}
