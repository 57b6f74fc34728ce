import type { Database } from "./db.js";

/**
 * Small durable facts kept across restarts (the AdapterState table): an
 * adapter's registered command-list hash, reflection progress per session.
 */
export class KvStore {
  constructor(readonly db: Database) {}

  async get(key: string): Promise<string | undefined> {
    const [r] = await this.db.query<{ value: string }>("kv-get", `SELECT "value" FROM "AdapterState" WHERE "key" = ?`, [key]);
    return r?.value;
  }

  async set(key: string, value: string): Promise<void> {
    await this.db.exec(
      "kv-set",
      `INSERT INTO "AdapterState" ("key","value","updatedAt") VALUES (?,?,?) ON CONFLICT ("key") DO UPDATE SET "value" = excluded."value", "updatedAt" = excluded."updatedAt"`,
      [key, value, new Date()],
    );
  }
}
