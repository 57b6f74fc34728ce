import type { Database } from "./db.js";

/**
 * Small durable facts kept across restarts (the AdapterState table): an
 * adapter's registered command-list hash, reflection progress per session.
 */
export class KvStore {
  constructor(readonly db: Database) {}

  async get(key: string): Promise<string | undefined> {
    const [r] = await this.db.query("kv-get", this.db.q.selectFrom("AdapterState").select("value").where("key", "=", key));
    return r?.value;
  }

  async set(key: string, value: string): Promise<void> {
    await this.db.exec(
      "kv-set",
      this.db.q
        .insertInto("AdapterState")
        .values({ key, value, updatedAt: new Date() })
        .onConflict((oc) => oc.column("key").doUpdateSet((eb) => ({ value: eb.ref("excluded.value"), updatedAt: eb.ref("excluded.updatedAt") }))),
    );
  }
}
