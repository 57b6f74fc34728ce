import { randomUUID } from "node:crypto";
import { setBounded } from "../bounded.js";
import type { Database } from "./db.js";
import { prepare, type Param } from "./prepared.js";

// Hot path (every turn): compiled once (prepared.ts).
const RECALL = prepare((b, p: Param<{ scope: string; limit: number }>) =>
  b.selectFrom("Memory").select("content").where("scope", "=", p("scope")).orderBy("createdAt", "desc").orderBy("id", "asc").limit(p("limit")),
);

export interface MemoryRecord {
  id: string;
  scope: string;
  sessionId: string | null;
  content: string;
  createdAt: Date;
}

/** Scopes whose recall is kept in memory (bounded; a miss costs one indexed read). */
const CACHE_LIMIT = 10_000;

/** Condensed memories, partitioned by memory scope (src/session/memory-scope.ts makes the scope). */
export class MemoryStore {
  readonly #cache: Map<string, { limit: number; contents: string[] }> | undefined;
  #lastStamp = 0;
  /** Bumped by every write, so a recall that raced a write does not cache what it read before it. */
  #generation = 0;

  /**
   * With `cache`, recall answers from memory after the first read of a scope
   * and every write here drops that scope: right only when this process is
   * the one writer (not SHARED_DATABASE, where other processes write too).
   */
  constructor(
    readonly db: Database,
    opts: { cache?: boolean } = {},
  ) {
    if (opts.cache) this.#cache = new Map();
  }

  /** A write drops the scope's cached recall before it starts and again once it settled (a recall meanwhile read either side). */
  async #writing<T>(scope: string, write: () => Promise<T>): Promise<T> {
    this.#generation++;
    this.#cache?.delete(scope);
    try {
      return await write();
    } finally {
      this.#generation++;
      this.#cache?.delete(scope);
    }
  }

  /**
   * The first of `n` timestamps one millisecond apart, later than any this store gave
   * before: recall orders by time, and two writes in the same millisecond would otherwise
   * come back in the order of their random ids.
   */
  #stamps(n: number): number {
    const first = Math.max(Date.now(), this.#lastStamp + 1);
    this.#lastStamp = first + n - 1;
    return first;
  }

  async add(scope: string, sessionId: string | null, contents: string[]): Promise<void> {
    if (contents.length === 0) return;
    // One millisecond apart, so recall keeps the condenser's order.
    const now = this.#stamps(contents.length);
    await this.#writing(scope, () =>
      this.db.exec(
        "add-memories",
        this.db.q.insertInto("Memory").values(contents.map((content, i) => ({ id: randomUUID(), scope, sessionId, content, createdAt: new Date(now + i) }))),
      ),
    );
  }

  /**
   * A review's memories and its cursor (an AdapterState key, as KvStore keeps
   * it) in one transaction: a review whose cursor write failed would otherwise
   * be done again by the next one, and write the same memories twice.
   */
  async addReviewed(scope: string, sessionId: string, contents: string[], cursor: { key: string; value: string }): Promise<void> {
    const now = this.#stamps(Math.max(1, contents.length));
    const q = this.db.q;
    await this.#writing(scope, () =>
      this.db.sqlTransaction("add-memories", async (s) => {
        if (contents.length)
          await s.run(
            q.insertInto("Memory").values(contents.map((content, i) => ({ id: randomUUID(), scope, sessionId, content, createdAt: new Date(now + i) }))),
          );
        const updatedAt = new Date();
        await s.run(
          q
            .insertInto("AdapterState")
            .values({ key: cursor.key, value: cursor.value, updatedAt })
            .onConflict((oc) => oc.column("key").doUpdateSet((eb) => ({ value: eb.ref("excluded.value"), updatedAt: eb.ref("excluded.updatedAt") }))),
        );
      }),
    );
  }

  /** The most recent memories of a scope, oldest first. */
  async recall(scope: string, limit = 20): Promise<string[]> {
    const hit = this.#cache?.get(scope);
    if (hit && hit.limit === limit) return [...hit.contents];
    const generation = this.#generation;
    // Every turn reads this: on the (scope, createdAt) index.
    const rows = await this.db.query("recall-memories", RECALL.bind(this.db, { scope, limit }));
    const contents = rows.reverse().map((r) => r.content);
    if (this.#cache && generation === this.#generation) setBounded(this.#cache, scope, { limit, contents }, CACHE_LIMIT);
    return [...contents];
  }

  list(scope: string): Promise<MemoryRecord[]> {
    return this.db.query(
      "memory-list",
      this.db.q.selectFrom("Memory").select(["id", "scope", "sessionId", "content", "createdAt"]).where("scope", "=", scope).orderBy("createdAt", "asc"),
    );
  }

  /** Replaces a scope's memories with a condensed set (compaction of a private scope). */
  replace(scope: string, contents: string[]): Promise<void> {
    const b = this.db.q;
    return this.#writing(scope, () =>
      this.db.sqlTransaction("memory-compact", async (q) => {
        await q.run(b.deleteFrom("Memory").where("scope", "=", scope));
        const now = this.#stamps(Math.max(1, contents.length));
        if (contents.length)
          await q.run(
            b.insertInto("Memory").values(contents.map((content, i) => ({ id: randomUUID(), scope, sessionId: null, content, createdAt: new Date(now + i) }))),
          );
      }),
    );
  }
}
