import { afterEach, describe, expect, it } from "vitest";
import { Registry } from "../../src/session/index.js";
import { DeliveryStore, InboundStore, SessionStore, TranscriptStore, TurnStore } from "../../src/store/index.js";
import { PROVIDERS, openTestDb, type TestDb } from "../support/db.js";
import { prisma } from "../support/prisma.js";

const address = { platform: "telegram", botId: "b", chatId: "c" };
const HOUR = 3_600_000;

/** A turn answering one event with one message and one reply. */
const oneTurn = (sessionId: string, inboundId: string) => ({
  sessionId,
  inboundIds: [inboundId],
  messages: [{ role: "user", content: "hi" }],
  turnIncrement: 1,
  deliveries: [{ address, text: "r" }],
  ttlMs: HOUR,
});

// A turn's commit is one statement on PostgreSQL (postgres/turn-statement.ts) and four on SQLite
// (turns.ts): both must write and refuse alike, whatever the shape of the turn.
describe.each(PROVIDERS)("a turn's commit on %s", (provider) => {
  let t: TestDb | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  async function setup() {
    t = await openTestDb(provider);
    const registry = new Registry(new SessionStore(t.db));
    const session = await registry.ensure({ agentId: "a", userId: "u", channel: "c", kind: "chat", createIfMissing: true });
    const inbound = new InboundStore(t.db);
    const record = async (eventId: string, occurredAt: Date) =>
      ((await inbound.record({ platform: "telegram", botId: "b", eventId, envelope: "{}", occurredAt })) as { id: string }).id;
    return { db: t.db, registry, session, record, turns: new TurnStore(t.db), transcript: new TranscriptStore(t.db) };
  }

  it("writes the messages after the session's last seq, the turn count, the replies expiring a TTL after the earliest event, and marks the events done", async () => {
    const { db, session, record, turns, transcript } = await setup();
    await transcript.append(session.id, [{ role: "user", content: "before" }]);
    const early = new Date(Date.now() - HOUR / 2);
    const ids = [await record("e1", new Date(Date.now() - HOUR / 4)), await record("e2", early)];
    const createdAt = new Date("2026-01-02T03:04:05.678Z");
    const r = await turns.commit({
      sessionId: session.id,
      inboundIds: ids,
      messages: [
        { role: "user", content: "hi", meta: '{"m":1}', sourceId: "telegram:b:c:1", createdAt },
        { role: "assistant", content: "echo: hi" },
      ],
      turnIncrement: 1,
      deliveries: [
        { address, text: "one" },
        { address: { ...address, threadId: "7" }, text: "two" },
      ],
      ttlMs: HOUR,
    });
    const expiresAt = new Date(early.getTime() + HOUR);
    expect(r.transcript).toBe("ok");
    expect(r.deliveries).toMatchObject([
      { inboundId: ids[0], sessionId: session.id, address, part: 0, text: "one", status: "pending", expiresAt },
      { inboundId: ids[0], address: { ...address, threadId: "7" }, part: 1, text: "two", expiresAt },
    ]);
    // As written: a read back is the same row.
    const deliveries = new DeliveryStore(db);
    for (const d of r.deliveries) expect(await deliveries.find(d.id)).toEqual(d);
    const rows = await prisma(db).read((c) => c.message.findMany({ where: { sessionId: session.id }, orderBy: { seq: "asc" } }));
    expect(rows.map((m) => [m.seq, m.role, m.content, m.meta, m.sourceId])).toEqual([
      [1, "user", "before", null, null],
      [2, "user", "hi", '{"m":1}', "telegram:b:c:1"],
      [3, "assistant", "echo: hi", null, null],
    ]);
    expect(rows[1]!.createdAt).toEqual(createdAt);
    const s = await prisma(db).read((c) => c.session.findUnique({ where: { id: session.id } }));
    expect(s?.turnCount).toBe(1);
    const events = await prisma(db).read((c) => c.inboundEvent.findMany({ where: { id: { in: ids } } }));
    expect(events.map((e) => [e.status, e.sessionId])).toEqual([
      ["done", session.id],
      ["done", session.id],
    ]);
  });

  it("a commit whose events were handled already writes nothing (duplicate)", async () => {
    const { db, session, record, turns } = await setup();
    const id = await record("e1", new Date());
    const turn = oneTurn(session.id, id);
    expect((await turns.commit(turn)).transcript).toBe("ok");
    expect(await turns.commit(turn)).toEqual({ transcript: "duplicate", deliveries: [] });
    expect(await prisma(db).read((c) => c.message.count({ where: { sessionId: session.id } }))).toBe(1);
    expect(await prisma(db).read((c) => c.outboundDelivery.count())).toBe(1);
    expect((await prisma(db).read((c) => c.session.findUnique({ where: { id: session.id } })))?.turnCount).toBe(1);
  });

  it("an archived session keeps its transcript, a missing one has none; their replies are still written; no transcript change is skipped", async () => {
    const { db, registry, session, record, turns } = await setup();
    await registry.archive({ userId: "u", agentId: "a" }, session.id);
    const turn = (sessionId: string, inboundIds: string[], messages = [{ role: "user", content: "late" }]) => ({
      sessionId,
      inboundIds,
      messages,
      turnIncrement: messages.length ? 1 : 0,
      deliveries: [{ address, text: "r" }],
      ttlMs: HOUR,
    });
    const archived = await turns.commit(turn(session.id, [await record("e1", new Date())]));
    expect(archived.transcript).toBe("archived");
    expect(archived.deliveries).toHaveLength(1);
    expect((await turns.commit(turn("no-such-session", [await record("e2", new Date())]))).transcript).toBe("missing");
    const before = new Date();
    const skipped = await turns.commit(turn(session.id, [], []));
    expect(skipped.transcript).toBe("skipped");
    // Without an inbound event, a reply expires a TTL after now.
    expect(skipped.deliveries[0]!.expiresAt.getTime()).toBeGreaterThanOrEqual(before.getTime() + HOUR);
    expect(await prisma(db).read((c) => c.message.count())).toBe(0);
    expect(await prisma(db).read((c) => c.outboundDelivery.count())).toBe(3);
  });

  it.runIf(provider === "postgresql")("is one statement on PostgreSQL: one round trip instead of four", async () => {
    const { db, session, record, turns } = await setup();
    const id = await record("e1", new Date());
    const before = db.statementsByOp.get("commit-turn") ?? 0;
    await turns.commit(oneTurn(session.id, id));
    expect((db.statementsByOp.get("commit-turn") ?? 0) - before).toBe(1);
  });
});
