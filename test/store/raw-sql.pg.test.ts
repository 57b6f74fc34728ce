import { afterEach, describe, expect, it } from "vitest";
import { DeliveryStore, InboundStore, StoreError, TurnStore } from "../../src/store/index.js";
import type { Database } from "../../src/store/index.js";
import { PROVIDERS, openTestDb, sqliteOf, type TestDb } from "../support/db.js";
import { prisma } from "../support/prisma.js";

const kvInsert = (db: Database, key: string, value: string) => db.q.insertInto("AdapterState").values({ key, value, updatedAt: new Date() });

describe.each(PROVIDERS)("the raw hot path on %s", (provider) => {
  let t: TestDb | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("writes values Prisma reads back unchanged (dates, booleans, nulls)", async () => {
    t = await openTestDb(provider);
    const inbound = new InboundStore(t.db);
    const occurredAt = new Date("2026-01-02T03:04:05.678Z");
    const rec = await inbound.record({ platform: "telegram", botId: "b", eventId: "e1", envelope: "{}", occurredAt, conversation: "c" });
    expect(rec).not.toBe("duplicate");
    const id = (rec as { id: string }).id;
    const row = await prisma(t.db).read((c) => c.inboundEvent.findUnique({ where: { id } }));
    expect(row).toMatchObject({ occurredAt, status: "received", processedAt: null, note: null, conversation: "c" });
    // Prisma's comparison operators work on what the raw path wrote.
    expect(
      await prisma(t.db).read((c) => c.inboundEvent.count({ where: { receivedAt: { lt: new Date(Date.now() + 60_000) }, occurredAt: { gte: occurredAt } } })),
    ).toBe(1);
    expect(await inbound.record({ platform: "telegram", botId: "b", eventId: "e1", envelope: "{}", occurredAt })).toBe("duplicate");
    await inbound.mark(id, "ignored", "why");
    expect(await prisma(t.db).read((c) => c.inboundEvent.findUnique({ where: { id } }))).toMatchObject({ status: "ignored", note: "why" });

    const turns = new TurnStore(t.db);
    const expiresAt = new Date("2030-01-01T00:00:00.000Z");
    const r = await turns.commit({
      sessionId: "",
      inboundIds: [],
      messages: [],
      turnIncrement: 0,
      deliveries: [{ platform: "telegram", botId: "b", address: "{}", text: "hi", expiresAt }],
    });
    const d = await new DeliveryStore(t.db).find(r.deliveryIds[0]!);
    expect(d).toMatchObject({ status: "pending", attempts: 0, expiresAt, sentAt: null, text: "hi" });
    expect(await prisma(t.db).read((c) => c.outboundDelivery.findUnique({ where: { id: r.deliveryIds[0]! } }))).toMatchObject({ expiresAt, status: "pending" });
  });

  it("shared mode: a reply whose claim its process keeps renewing is never stale, however old", async () => {
    t = await openTestDb(provider);
    const deliveries = new DeliveryStore(t.db);
    const r = await new TurnStore(t.db).commit({
      sessionId: "",
      inboundIds: [],
      messages: [],
      turnIncrement: 0,
      deliveries: [{ platform: "telegram", botId: "b", address: "{}", text: "queued", expiresAt: new Date(Date.now() + 60_000) }],
    });
    const id = r.deliveryIds[0]!;
    await new Promise((res) => setTimeout(res, 250));
    expect((await deliveries.unsent({ staleAfterMs: 150 })).map((d) => d.id)).toEqual([id]); // abandoned: another process takes it over
    await deliveries.renewClaims([id], "process-a");
    expect(await deliveries.unsent({ staleAfterMs: 150 })).toEqual([]); // held and renewed: left to its holder
    await new Promise((res) => setTimeout(res, 250));
    expect((await deliveries.unsent({ staleAfterMs: 150 })).map((d) => d.id)).toEqual([id]); // the holder stopped renewing
  });

  it("a transaction that throws leaves nothing behind, and its siblings commit", async () => {
    t = await openTestDb(provider);
    const db = t.db;
    const results = await Promise.allSettled([
      db.exec("a", kvInsert(db, "a", "1")),
      db.sqlTransaction("b", async (q) => {
        await q.run(kvInsert(db, "b", "1"));
        throw new Error("changed my mind");
      }),
      db.exec("dup", kvInsert(db, "a", "2")),
      db.sqlTransaction("c", async (q) => {
        await q.run(kvInsert(db, "c", "1"));
        return (await q.all(db.q.selectFrom("AdapterState").select("value").where("key", "=", "c")))[0]?.value;
      }),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason.message).toBe("changed my mind");
    expect((results[3] as PromiseFulfilledResult<string>).value).toBe("1");
    const rows = await prisma(db).read((c) => c.adapterState.findMany({ orderBy: { key: "asc" } }));
    expect(rows.map((r) => [r.key, r.value])).toEqual([
      ["a", "1"],
      ["c", "1"],
    ]);
  });

  it("a lost commit acknowledgement is CommitUnknown for that unit only", async () => {
    t = await openTestDb(provider, {
      faults: {
        beforeCommit: (op) => {
          if (op === "lost-before") throw new Error("connection lost before the commit");
        },
        afterCommit: (op) => {
          if (op === "lost-after") throw new Error("ack lost");
        },
      },
    });
    const db = t.db;
    const [before, after, fine] = await Promise.allSettled([
      db.sqlTransaction("lost-before", (q) => q.run(kvInsert(db, "before", "1"))),
      db.sqlTransaction("lost-after", (q) => q.run(kvInsert(db, "after", "1"))),
      db.sqlTransaction("fine", (q) => q.run(kvInsert(db, "fine", "1"))),
    ]);
    expect(before.status === "rejected" && before.reason instanceof StoreError && before.reason.code).toBe("CommitUnknown");
    expect(after.status === "rejected" && after.reason instanceof StoreError && after.reason.code).toBe("CommitUnknown");
    expect(fine.status).toBe("fulfilled");
    const keys = (await prisma(db).read((c) => c.adapterState.findMany())).map((r) => r.key).sort();
    // "before" never committed; "after" did, only its acknowledgement was lost.
    expect(keys).toEqual(["after", "fine"]);
  });

  it("a closed handle refuses raw work with a clear error", async () => {
    t = await openTestDb(provider);
    await t.db.close();
    await expect(t.db.exec("late", kvInsert(t.db, "x", "1"))).rejects.toMatchObject({ code: "Unavailable" });
    await expect(t.db.query("late", t.db.q.selectFrom("AdapterState").select("key"))).rejects.toMatchObject({ code: "Unavailable" });
    t = undefined;
  });
});

describe("SQLite group commit", () => {
  let t: TestDb | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("writes issued together share one COMMIT, and each caller hears back only after it", async () => {
    t = await openTestDb("sqlite");
    const db = sqliteOf(t.db);
    const before = { ...db.groupStats };
    const writes = Array.from({ length: 200 }, (_, i) => db.exec(`w${i}`, kvInsert(db, `k${i}`, "v")));
    // Nothing is acknowledged before its COMMIT: at the first acknowledgement every row of its group is visible.
    const first = await Promise.race(writes.map((w) => w.then(() => prisma(db).read((c) => c.adapterState.count()))));
    await Promise.all(writes);
    expect(first).toBe(200);
    expect(db.groupStats.commits - before.commits).toBeLessThanOrEqual(2);
    expect(db.groupStats.units - before.units).toBe(200);
    expect(await prisma(db).read((c) => c.adapterState.count())).toBe(200);
  });

  it("spends no statement on transaction control it does not need: a lone write autocommits, a unit has no savepoints", async () => {
    t = await openTestDb("sqlite");
    const db = t.db;
    const count = () => new Map(db.statementsByOp);
    const c0 = count();
    await db.exec("lone", kvInsert(db, "lone", "1"));
    const c1 = count();
    const diff = (a: Map<string, number>, b: Map<string, number>) =>
      Object.fromEntries([...b].map(([k, v]) => [k, v - (a.get(k) ?? 0)] as const).filter(([, v]) => v > 0));
    expect(diff(c0, c1)).toEqual({ lone: 1 }); // no BEGIN IMMEDIATE / COMMIT around one statement
    await Promise.all([
      db.exec("single", kvInsert(db, "s", "1")),
      db.sqlTransaction("unit", async (q) => {
        await q.run(kvInsert(db, "u1", "1"));
        await q.run(kvInsert(db, "u2", "1"));
      }),
    ]);
    expect(diff(c1, count())).toEqual({ "group BEGIN IMMEDIATE": 1, single: 1, unit: 2, "group COMMIT": 1 }); // no SAVEPOINT/RELEASE
    expect((await db.query("keys", db.q.selectFrom("AdapterState").select("key").orderBy("key"))).map((r) => r.key)).toEqual(["lone", "s", "u1", "u2"]);
  });

  it("a failing unit in a group is rolled back whole (no savepoint), its siblings before and after it commit once", async () => {
    t = await openTestDb("sqlite");
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
      db.exec("after", kvInsert(db, "after", "1")),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason.code).toBe("SQLITE_CONSTRAINT_PRIMARYKEY");
    expect(ranBefore).toBe(2); // rolled back with the group and run again without the failed unit
    const rows = await db.query("rows", db.q.selectFrom("AdapterState").select(["key", "value"]).orderBy("key"));
    expect(rows).toEqual([
      { key: "after", value: "1" },
      { key: "before", value: "1" },
    ]);
  });
});
