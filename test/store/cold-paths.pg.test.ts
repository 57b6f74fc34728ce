import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccessStore, IdentityStore, SessionStore, StoreError, TranscriptStore, type SessionRecord } from "../../src/store/index.js";
import { PROVIDERS, openTestDb, type TestDb } from "../support/db.js";

const session = (id: string): SessionRecord => ({
  id,
  agentId: "echo",
  userId: "u1",
  groupId: null,
  channel: "telegram",
  kind: "dm",
  projectId: null,
  title: null,
  parentId: null,
  persona: null,
  metadata: "{}",
  turnCount: 0,
  createdAt: new Date("2026-12-01T10:00:00.000Z"),
  lastActive: new Date("2026-12-01T10:00:00.000Z"),
  archived: false,
  archivedAt: null,
  endReason: null,
});

const pairing = (code: string, senderId: string, expiresAt: Date) => ({
  code,
  platform: "telegram",
  botId: "bot",
  channel: "telegram:bot",
  senderId,
  displayName: null,
  expiresAt,
});

// The cold paths that used to run on Prisma's client, now on the data-access rule (Kysely via db.q).
describe.each(PROVIDERS)("the stores' cold paths on %s", (provider) => {
  let t: TestDb;
  beforeAll(async () => {
    t = await openTestDb(provider);
  });
  // None of the calls below can load Prisma's client: nothing under src/ imports it (test/store/data-access.test.ts).
  afterAll(async () => {
    await t.close();
  });

  it("a session inserted twice is a Conflict (the driver's unique violation, mapped), and the first row stays", async () => {
    const s = new SessionStore(t.db);
    await s.insert(session("s-dup"));
    const again = await s.insert({ ...session("s-dup"), title: "second" }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(StoreError);
    expect((again as StoreError).code).toBe("Conflict");
    const row = await s.find("s-dup");
    expect(row?.title).toBeNull();
    expect(row?.createdAt.toISOString()).toBe("2026-12-01T10:00:00.000Z");
    expect(row?.archived).toBe(false);
  });

  it("a grant given twice keeps its first source; a link can be moved to another person", async () => {
    const a = new AccessStore(t.db);
    expect(await a.isGranted("telegram", "bot", "g1")).toBe(false);
    await a.grant("telegram", "bot", "g1", "operator");
    await a.grant("telegram", "bot", "g1", "again");
    expect(await a.isGranted("telegram", "bot", "g1")).toBe(true);
    const i = new IdentityStore(t.db);
    const [u, p1, p2] = await Promise.all([i.userId("slack", "T/U1"), i.userId("slack", "T/U2"), i.userId("slack", "T/U3")]);
    await i.link(u, p1);
    await i.link(u, p2);
    expect(await i.personOf(u)).toBe(p2);
    expect(new Set(await i.accountsOf(u))).toEqual(new Set([u, p2]));
    expect(await i.findUser("no-such-user")).toBeNull();
    expect(await i.findGroup("no-such-group")).toBeNull();
  });

  it("pairing: concurrent senders never exceed the cap; a sender's live request is reused; approve grants once", async () => {
    const a = new AccessStore(t.db);
    const now = new Date();
    const later = new Date(now.getTime() + 3_600_000);
    const made = await Promise.all(Array.from({ length: 8 }, (_, k) => a.createPending(pairing(`C${k}`, `sender-${k}`, later), 3, now)));
    expect(made.every((m) => "record" in m && !m.reused)).toBe(true);
    const pending = (await a.listPending(now)).filter((r) => r.channel === "telegram:bot");
    expect(pending).toHaveLength(3); // the cap held under the race (PostgreSQL: the advisory lock; SQLite: the write lock)
    const last = pending.at(-1)!;
    const reused = await a.createPending(pairing("OTHER", last.senderId, later), 3, now);
    expect(reused).toMatchObject({ reused: true, record: { code: last.code } });
    expect(await a.livePending("telegram:bot", last.senderId, now)).toMatchObject({ code: last.code, status: "pending" });

    const approved = await a.approve(last.code, now);
    expect(approved).toMatchObject({ code: last.code, status: "approved" });
    expect((await a.find(last.code))?.decidedAt?.getTime()).toBe(now.getTime());
    expect(await a.isGranted("telegram", "bot", last.senderId)).toBe(true);
    expect(await a.approve(last.code, now)).toBe("decided");
    expect(await a.approve("C0", now)).toBe("replaced");
    expect(await a.approve("nope", now)).toBe("missing");

    const gone = new Date(now.getTime() - 1);
    await a.createPending(pairing("OLD", "late", gone), 3, new Date(now.getTime() - 10));
    expect(await a.approve("OLD", now)).toBe("expired");
    expect((await a.find("OLD"))?.status).toBe("expired");
  });

  it("pairing: a sender asking again too soon is throttled until the interval has passed", async () => {
    const a = new AccessStore(t.db);
    const now = new Date();
    const later = new Date(now.getTime() + 3_600_000);
    const first = await a.createPending({ ...pairing("T1", "eager", later), channel: "telegram:throttle" }, 5, now, 60_000);
    expect("record" in first).toBe(true);
    await a.approve("T1", now); // approved requests do not count
    const second = await a.createPending({ ...pairing("T2", "eager", later), channel: "telegram:throttle" }, 5, now, 60_000);
    expect("record" in second).toBe(true);
    const t3 = await a.createPending({ ...pairing("T3", "eager", later), channel: "telegram:throttle" }, 5, new Date(now.getTime() + 10), 60_000);
    expect(t3).toMatchObject({ reused: true }); // still pending: reused, not throttled
    await t.db.exec("expire-by-hand", t.db.q.updateTable("PairingRequest").set({ status: "expired" }).where("code", "=", "T2"));
    const t4 = await a.createPending({ ...pairing("T4", "eager", later), channel: "telegram:throttle" }, 5, new Date(now.getTime() + 20), 60_000);
    expect(t4).toEqual({ throttledUntil: new Date(now.getTime() + 60_000) });
  });

  it("transcript search: every term, any case, `%` and `_` as plain characters, newest first, one hit per session", async () => {
    const s = new SessionStore(t.db);
    const tr = new TranscriptStore(t.db);
    for (const id of ["q1", "q2", "q3"]) await s.insert(session(id));
    await tr.append("q1", [{ role: "user", content: "Deploy on FRIDAY at 100% load" }]);
    await tr.append("q2", [{ role: "user", content: "deploy_fri script" }]);
    await tr.append("q2", [{ role: "user", content: "we deploy on friday" }]);
    await tr.append("q3", [{ role: "user", content: "friday fun" }]);
    const hits = await tr.search(["q1", "q2", "q3"], ["deploy", "friday"]);
    expect(hits.map((h) => h.sessionId).sort()).toEqual(["q1", "q2"]);
    expect(hits.find((h) => h.sessionId === "q2")?.snippet).toBe("we deploy on friday");
    expect((await tr.search(["q1", "q2", "q3"], ["100%"])).map((h) => h.sessionId)).toEqual(["q1"]);
    expect((await tr.search(["q1", "q2", "q3"], ["y_f"])).map((h) => h.sessionId)).toEqual(["q2"]);
    expect(await tr.search(["q1", "q2", "q3"], ["0%l"])).toEqual([]);
    expect(await tr.search(["q3"], ["deploy"])).toEqual([]);
  });
});
