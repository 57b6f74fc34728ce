import { randomUUID } from "node:crypto";
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

/** Condensed memories, partitioned by memory scope (src/session/memory-scope.ts makes the scope). */
export class MemoryStore {
  constructor(readonly db: Database) {}

  async add(scope: string, sessionId: string | null, contents: string[]): Promise<void> {
    if (contents.length === 0) return;
    // One millisecond apart, so recall keeps the condenser's order.
    const now = Date.now();
    await this.db.exec(
      "add-memories",
      this.db.q.insertInto("Memory").values(contents.map((content, i) => ({ id: randomUUID(), scope, sessionId, content, createdAt: new Date(now + i) }))),
    );
  }

  /** The most recent memories of a scope, oldest first. */
  async recall(scope: string, limit = 20): Promise<string[]> {
    // Every turn reads this: on the (scope, createdAt) index.
    const rows = await this.db.query("recall-memories", RECALL.bind(this.db, { scope, limit }));
    return rows.reverse().map((r) => r.content);
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
    return this.db.sqlTransaction("memory-compact", async (q) => {
      await q.run(b.deleteFrom("Memory").where("scope", "=", scope));
      const now = new Date();
      if (contents.length)
        await q.run(b.insertInto("Memory").values(contents.map((content) => ({ id: randomUUID(), scope, sessionId: null, content, createdAt: now }))));
    });
  }
}
