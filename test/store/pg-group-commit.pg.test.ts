import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import type { Database } from "../../src/store/index.js";
import { PostgresDatabase } from "../../src/store/postgres/database.js";
import { MAX_GROUP_UNITS } from "../../src/store/postgres/group-commit.js";
import { openTestDb, type TestDb } from "../support/db.js";

const kvInsert = (db: Database, key: string, value: string) => db.q.insertInto("AdapterState").values({ key, value, updatedAt: new Date() });
const keys = async (db: Database) => (await db.query("keys", db.q.selectFrom("AdapterState").select("key").orderBy("key"))).map((r) => r.key);

function pgOf(db: Database): PostgresDatabase {
  if (!(db instanceof PostgresDatabase)) throw new Error(`a PostgreSQL database was expected, not ${db.provider}`);
  return db;
}

/**
 * PostgreSQL group commit: transactions issued in the same turn of the
 * event loop share one transaction and one COMMIT on one connection; a
 * failing unit leaves nothing behind and its siblings still commit once; a
 * group that loses its connection fails every unit, with nothing applied.
 */
describe("PostgreSQL group commit", () => {
  let t: TestDb | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("transactions issued together share one COMMIT, and each caller hears back only after it", async () => {
    t = await openTestDb("postgresql");
    const db = pgOf(t.db);
    const before = { ...db.groupStats };
    const c0 = new Map(db.statementsByOp);
    const n = MAX_GROUP_UNITS;
    const txs = Array.from({ length: n }, (_, i) =>
      db.sqlTransaction(`t${i}`, async (q) => {
        await q.run(kvInsert(db, `k${i}`, "a"));
        await q.run(kvInsert(db, `k${i}-2`, "b"));
        return i;
      }),
    );
    // Nothing is acknowledged before its COMMIT: at the first acknowledgement every row of its group is visible to another connection.
    const first = await Promise.race(txs.map((w) => w.then(() => keys(db))));
    expect(await Promise.all(txs)).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(first).toHaveLength(2 * n);
    expect(db.groupStats.commits - before.commits).toBe(1);
    expect(db.groupStats.units - before.units).toBe(n);
    expect((db.statementsByOp.get("group COMMIT") ?? 0) - (c0.get("group COMMIT") ?? 0)).toBe(1);
    expect((db.statementsByOp.get("group BEGIN") ?? 0) - (c0.get("group BEGIN") ?? 0)).toBe(1);
  });

  it("single writes join the group; a lone one autocommits with no BEGIN or COMMIT", async () => {
    t = await openTestDb("postgresql");
    const db = pgOf(t.db);
    const count = () => new Map(db.statementsByOp);
    const diff = (a: Map<string, number>, b: Map<string, number>) =>
      Object.fromEntries([...b].map(([k, v]) => [k, v - (a.get(k) ?? 0)] as const).filter(([, v]) => v > 0));
    const c0 = count();
    await db.exec("lone", kvInsert(db, "lone", "1"));
    const c1 = count();
    expect(diff(c0, c1)).toEqual({ lone: 1 });
    const [n, rows] = await Promise.all([
      db.exec("single", kvInsert(db, "s", "1")),
      db.writeReturning("returning", kvInsert(db, "r", "1").returning("key")),
      db.sqlTransaction("unit", async (q) => {
        await q.run(kvInsert(db, "u1", "1"));
        await q.run(kvInsert(db, "u2", "1"));
      }),
    ]);
    expect([n, rows]).toEqual([1, [{ key: "r" }]]);
    expect(diff(c1, count())).toEqual({ "group BEGIN": 1, single: 1, returning: 1, unit: 2, "group COMMIT": 1 });
    expect(await keys(db)).toEqual(["lone", "r", "s", "u1", "u2"]);
  });

  it("more than a group's worth at once makes several groups, each committed once", async () => {
    t = await openTestDb("postgresql");
    const db = pgOf(t.db);
    const before = { ...db.groupStats };
    const n = MAX_GROUP_UNITS * 2 + 1;
    await Promise.all(Array.from({ length: n }, (_, i) => db.sqlTransaction(`t${i}`, (q) => q.run(kvInsert(db, `k${i}`, "v")))));
    expect(db.groupStats.commits - before.commits).toBe(3);
    expect(await keys(db)).toHaveLength(n);
  });

  it("a failing unit is rolled back whole (no savepoint), its siblings before and after it commit once", async () => {
    t = await openTestDb("postgresql");
    const db = t.db;
    let ranBefore = 0;
    const results = await Promise.allSettled([
      db.sqlTransaction("before", async (q) => {
        ranBefore++;
        await q.run(kvInsert(db, "before", "1"));
      }),
      db.sqlTransaction("half", async (q) => {
        await q.run(kvInsert(db, "half-1", "1"));
        await q.run(kvInsert(db, "before", "again")); // a unique violation after one write
      }),
      db.sqlTransaction("after", (q) => q.run(kvInsert(db, "after", "1"))),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason.code).toBe("23505");
    expect(ranBefore).toBe(2); // rolled back with the group and run again without the failed unit
    expect(await keys(db)).toEqual(["after", "before"]);
  });

  it("a unit whose commit is lost is left out; the others commit, and it alone hears CommitUnknown", async () => {
    let lose = "";
    t = await openTestDb("postgresql", {
      faults: {
        beforeCommit: (op) => {
          if (op === lose) throw new Error("connection lost while committing");
        },
      },
    });
    const db = t.db;
    lose = "lost";
    const results = await Promise.allSettled([
      db.sqlTransaction("kept", (q) => q.run(kvInsert(db, "kept", "1"))),
      db.sqlTransaction("lost", (q) => q.run(kvInsert(db, "lost", "1"))),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected"]);
    expect((results[1] as PromiseRejectedResult).reason.code).toBe("CommitUnknown");
    expect(await keys(db)).toEqual(["kept"]);
  });

  it("a group whose connection is lost fails every unit, and nothing of it is applied", async () => {
    t = await openTestDb("postgresql");
    const db = t.db;
    const results = await Promise.allSettled([
      db.sqlTransaction("one", (q) => q.run(kvInsert(db, "one", "1"))),
      db.sqlTransaction("killer", async (q) => {
        await q.run(kvInsert(db, "killer", "1"));
        // The server ends this connection: the transaction is gone for every unit in it.
        await q.all(db.q.selectNoFrom(sql<boolean>`pg_terminate_backend(pg_backend_pid())`.as("x")));
      }),
      db.sqlTransaction("three", (q) => q.run(kvInsert(db, "three", "1"))),
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    for (const r of results) expect((r as PromiseRejectedResult).reason.code).toBe("Unavailable");
    expect(await keys(db)).toEqual([]);
    // The pool recovers: the next transaction commits.
    await db.sqlTransaction("later", (q) => q.run(kvInsert(db, "later", "1")));
    expect(await keys(db)).toEqual(["later"]);
  });
});
