import type { Database } from "./db.js";

/**
 * Small durable facts kept across restarts (the AdapterState table): an
 * adapter's registered command-list hash, reflection progress per session.
 */
export class KvStore {
  constructor(readonly db: Database) {}

  async get(key: string): Promise<string | undefined> {
    const r = await this.db.read((c) => c.adapterState.findUnique({ where: { key } }));
    return r?.value;
  }

  async set(key: string, value: string): Promise<void> {
    await this.db.write((c) => c.adapterState.upsert({ where: { key }, create: { key, value }, update: { value, updatedAt: new Date() } }));
  }
}
