import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { IdentityStore, MemoryStore } from "../../src/store/index.js";
import { PROVIDERS, openTestDb, type TestDb } from "../support/db.js";

describe.each(PROVIDERS)("canonical identities and memories on %s", (provider) => {
  let t: TestDb;
  beforeAll(async () => {
    t = await openTestDb(provider);
  });
  afterAll(async () => t.close());

  it("a group moved to a new chat id keeps its UUID there; a row made early for the new id is set aside; moving again changes nothing", async () => {
    const a = new IdentityStore(t.db);
    const old = await a.groupId("telegram", "-4001");
    const early = await a.groupId("telegram", "-100777"); // a message from the supergroup seen before the notice
    expect(await a.moveGroup("telegram", "-4001", "-100777")).toBe(old);
    expect(await a.groupId("telegram", "-100777")).toBe(old);
    expect(await new IdentityStore(t.db).groupId("telegram", "-100777")).toBe(old); // another process reads the same
    expect((await a.findGroup(early))?.externalId).toBe(`-100777:superseded:${early}`);
    // Both service messages announce the move: the second is a no-op.
    expect(await a.moveGroup("telegram", "-4001", "-100777")).toBeUndefined();
    expect(await a.groupId("telegram", "-100777")).toBe(old);
  });

  it("maps a platform user or group to one UUID, even when many callers race", async () => {
    const a = new IdentityStore(t.db);
    const b = new IdentityStore(t.db); // another process's cache
    const ids = await Promise.all([
      ...Array.from({ length: 10 }, () => a.userId("telegram", "42", "Ada")),
      ...Array.from({ length: 10 }, () => b.userId("telegram", "42")),
    ]);
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(await a.userId("discord", "42")).not.toBe(ids[0]); // unique on platform + external id
    const g = await Promise.all(Array.from({ length: 10 }, () => b.groupId("slack", "T1/C9")));
    expect(new Set(g).size).toBe(1);
    const thread = await a.groupId("slack", "T1/C9:thread:1.2", { parentId: g[0] });
    expect((await a.findGroup(thread))?.parentId).toBe(g[0]);
    expect((await a.findUser(ids[0]!))?.displayName).toBe("Ada");
  });

  it("identity links join one person's accounts across platforms", async () => {
    const s = new IdentityStore(t.db);
    const tg = await s.userId("telegram", "person-1");
    const dc = await s.userId("discord", "person-1");
    const sl = await s.userId("slack", "T1/U1");
    expect(await s.personOf(dc)).toBe(dc); // unlinked: their own person
    await s.link(dc, tg);
    await s.link(sl, tg);
    expect(await s.personOf(dc)).toBe(tg);
    expect(new Set(await s.accountsOf(sl))).toEqual(new Set([tg, dc, sl]));
  });

  it("memories are kept per scope in order, and a private scope can be compacted", async () => {
    const m = new MemoryStore(t.db);
    await m.add("private:bot:u1", "s1", ["likes tea", "lives in Oslo"]);
    await m.add("group:bot:g1", "s2", ["deploy on friday"]);
    expect(await m.recall("private:bot:u1")).toEqual(["likes tea", "lives in Oslo"]);
    await m.replace("private:bot:u1", ["likes tea; lives in Oslo"]);
    expect(await m.recall("private:bot:u1")).toEqual(["likes tea; lives in Oslo"]);
    expect(await m.recall("group:bot:g1")).toEqual(["deploy on friday"]);
  });

  it("memories written in the same millisecond come back in the order they were written, added one by one or condensed", async () => {
    const store = new MemoryStore(t.db);
    // A frozen clock: every write lands in one millisecond, as a burst of turns can.
    vi.useFakeTimers({ toFake: ["Date"], now: new Date("2026-12-01T12:00:00Z") });
    try {
      const lines = Array.from({ length: 20 }, (_, i) => `fact ${i}`);
      for (const line of lines) await store.add("private:bot:order", "s1", [line]);
      expect(await store.recall("private:bot:order")).toEqual(lines);
      const condensed = Array.from({ length: 12 }, (_, i) => `condensed ${i}`);
      await store.replace("private:bot:order", condensed);
      await store.add("private:bot:order", "s1", ["after"]);
      expect(await store.recall("private:bot:order")).toEqual([...condensed, "after"]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("a caching memory store (the one writer) reads a scope once and sees its own adds and compactions; without the cache every recall reads", async () => {
    const cached = new MemoryStore(t.db, { cache: true });
    const reads = () => t.db.statementsByOp.get("recall-memories") ?? 0;
    await cached.add("private:bot:c1", "s1", ["one"]);
    const r0 = reads();
    expect(await cached.recall("private:bot:c1")).toEqual(["one"]);
    expect(await cached.recall("private:bot:c1")).toEqual(["one"]);
    expect(reads() - r0).toBe(1); // the second recall came from memory
    await cached.add("private:bot:c1", "s1", ["two"]);
    expect(await cached.recall("private:bot:c1")).toEqual(["one", "two"]);
    await cached.replace("private:bot:c1", ["one and two"]);
    expect(await cached.recall("private:bot:c1")).toEqual(["one and two"]);
    // A recall racing a write never caches what it read before the write landed.
    const [during] = await Promise.all([cached.recall("private:bot:c1"), cached.add("private:bot:c1", "s1", ["three"])]);
    expect(["one and two", "one and two,three"]).toContain(during.join(","));
    expect(await cached.recall("private:bot:c1")).toEqual(["one and two", "three"]);
    // Shared mode: another process's write must be seen, so that store does not cache.
    const plain = new MemoryStore(t.db);
    const other = new MemoryStore(t.db);
    expect(await plain.recall("group:bot:c2")).toEqual([]);
    await other.add("group:bot:c2", null, ["from elsewhere"]);
    expect(await plain.recall("group:bot:c2")).toEqual(["from elsewhere"]);
  });
});
