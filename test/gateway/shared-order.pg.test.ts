import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../../src/gateway/app.js";
import { ConversationDrainer } from "../../src/gateway/inbound/conversation-drain.js";
import { silentLogger } from "../../src/log.js";
import type { InboundRecord } from "../../src/store/inbound.js";
import type { LeaseStore } from "../../src/store/leases.js";
import { PROVIDERS } from "../support/db.js";
import { eventually, startApp } from "../support/app.js";
import { freshDatabaseUrl } from "../support/db.js";
import { InboundStore, openDatabase } from "../../src/store/index.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { prisma } from "../support/prisma.js";

const record = (id: string): InboundRecord => ({
  id,
  platform: "telegram",
  botId: "1",
  eventId: id,
  status: "received",
  envelope: "{}",
  occurredAt: new Date(),
  receivedAt: new Date(),
  processedAt: null,
  sessionId: null,
  note: null,
  conversation: "",
  seq: 0,
  traceparent: null,
});

/**
 * Each process orders and paces a chat's replies in its own outbound queue.
 * A conversation may move to another process (its lease released) only once
 * the replies it produced here have left, or the next process's replies
 * overtake them (found by test/reliability/multiprocess.test.ts).
 */
describe("conversation leases: replies leave before the conversation moves on", () => {
  it("waits for the replies before releasing, and takes an event recorded meanwhile itself", async () => {
    const rows: InboundRecord[] = [record("e1"), record("e2")];
    const log: string[] = [];
    let holder: string | undefined;
    const inbound = {
      receivedIn: async (_c: string, limit = 50) => rows.filter((r) => r.status === "received").slice(0, limit),
      conversationsWaiting: async () => [],
    } as unknown as InboundStore;
    const leases = {
      acquire: async (_k: string, owner: string) => (holder === undefined || holder === owner ? ((holder = owner), log.push("acquire"), true) : false),
      renew: async () => true,
      release: async () => void ((holder = undefined), log.push("release")),
    } as unknown as LeaseStore;
    let flushes = 0;
    const drainer = new ConversationDrainer({
      inbound,
      leases,
      processId: "p1",
      log: silentLogger,
      take: async (rec) => {
        log.push(`take ${rec.id}`);
        return { done: Promise.resolve().then(() => void (rec.status = "done")) };
      },
      flushed: async (ids) => {
        log.push(`flush ${ids.join(",")}`);
        // Another process records an event of this conversation while our replies are still going out.
        if (flushes++ === 0) rows.push(record("e3"));
        await new Promise((r) => setTimeout(r, 20));
      },
    });
    drainer.start(Promise.resolve());
    drainer.kick("c");
    await drainer.idle();
    drainer.stop();
    expect(log).toEqual(["acquire", "take e1", "take e2", "flush e1,e2", "take e3", "flush e3", "release"]);
  });
});

describe("conversation leases: a renewal that fails stops the drain at once", () => {
  for (const failure of ["throws", "finds the lease taken"] as const) {
    it(`renewal ${failure}: no further event is taken, the error is logged and counted, the lease is not released`, async () => {
      const rows: InboundRecord[] = [record("r1")];
      const taken: string[] = [];
      const errors: string[] = [];
      const lines: string[] = [];
      let renewals = 0;
      let released = 0;
      const inbound = {
        receivedIn: async (_c: string, limit = 50) => rows.filter((r) => r.status === "received").slice(0, limit),
        conversationsWaiting: async () => [],
      } as unknown as InboundStore;
      const leases = {
        acquire: async () => true,
        renew: async () => {
          renewals++;
          if (failure === "throws") throw Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
          return false;
        },
        release: async () => void released++,
      } as unknown as LeaseStore;
      const log = { ...silentLogger, error: (_o: unknown, m: string) => void lines.push(m) } as unknown as typeof silentLogger;
      const drainer = new ConversationDrainer({
        inbound,
        leases,
        processId: "p1",
        log,
        renewMs: 20,
        onError: (where) => void errors.push(where),
        take: async (rec) => {
          taken.push(rec.id);
          // The first turn outlasts a renewal, which fails meanwhile.
          const done = new Promise<void>((resolve) => {
            const t = setInterval(() => {
              if (renewals > 0 && errors.length > 0) {
                clearInterval(t);
                rec.status = "done";
                // Meanwhile the chat went on: two more events wait in the conversation.
                rows.push(record("r2"), record("r3"));
                resolve();
              }
            }, 5);
          });
          return { done };
        },
      });
      drainer.start(Promise.resolve());
      drainer.kick("c");
      await drainer.idle();
      drainer.stop();
      expect(taken).toEqual(["r1"]);
      expect(errors).toEqual(["lease-renew"]);
      expect(lines.some((l) => l.includes("stops draining it"))).toBe(true);
      expect(released).toBe(0);
    });
  }
});

describe.each(PROVIDERS)("recorded order on %s", (provider) => {
  let app: App | undefined;
  afterEach(async () => {
    await app?.stop();
    app = undefined;
  });

  it("events of one conversation recorded back to back keep their order (a database sequence, not the clock)", async () => {
    const adapter = new MemoryAdapter();
    app = (await startApp(provider, [adapter])).app;
    const texts = Array.from({ length: 40 }, (_, i) => `m${i}`);
    for (const t of texts) expect((await adapter.ctx.inbound(adapter.dm("61", t))).status).toBe("accepted");
    const rows = await prisma(app.db).read((c) => c.inboundEvent.findMany({ orderBy: [{ seq: "asc" }] }));
    expect(rows.map((r) => (JSON.parse(r.envelope) as { text: string }).text)).toEqual(texts);
    const seqs = rows.map((r) => Number(r.seq));
    expect(seqs.every((q, i) => i === 0 || q > seqs[i - 1]!)).toBe(true);
  });

  it("two recorders whose clocks disagree by a minute still share one recorded order (replay and drain read it)", async () => {
    const url = await freshDatabaseUrl(provider);
    const a = await openDatabase({ url });
    const b = await openDatabase({ url, migrate: false });
    try {
      // Host A runs a minute fast: by the clock, everything B records comes first.
      const ahead = new InboundStore(a, () => new Date(Date.now() + 60_000));
      const behind = new InboundStore(b);
      const order: string[] = [];
      for (let i = 0; i < 10; i++) {
        const store = i % 2 === 0 ? ahead : behind;
        const eventId = `e${i}`;
        expect(await store.record({ platform: "telegram", botId: "1", eventId, envelope: "{}", occurredAt: new Date(), conversation: "c" })).not.toBe(
          "duplicate",
        );
        order.push(eventId);
      }
      expect((await behind.receivedIn("c")).map((r) => r.eventId)).toEqual(order);
      expect((await ahead.unhandled()).map((r) => r.eventId)).toEqual(order);
      // Pages of the replay continue where the last one ended, in the same order.
      const first = await ahead.unhandled(4);
      const rest = await ahead.unhandled(100, first[first.length - 1]!.seq);
      expect([...first, ...rest].map((r) => r.eventId)).toEqual(order);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("two processes with skewed clocks on one database: the shared drain answers a chat in recorded order", async () => {
    const url = await freshDatabaseUrl(provider);
    let open!: () => void;
    const latch = new Promise<void>((r) => (open = r));
    const agent = () => ({
      name: "gated-echo",
      async *run(req: { messages: Array<{ role: string; content: string }> }) {
        const last = [...req.messages].reverse().find((m) => m.role === "user")?.content ?? "";
        if (last === "x0") await latch;
        yield { type: "done" as const, text: `echo: ${last}`, toolRounds: 0 };
      },
    });
    const env = { DATABASE_URL: url, SHARED_DATABASE: "true" };
    const fast = new MemoryAdapter("900");
    const slow = new MemoryAdapter("900");
    const A = await startApp(provider, [fast], env, { agentFactory: agent, clock: () => new Date(Date.now() + 60_000) });
    const B = await startApp(provider, [slow], env, { agentFactory: agent });
    try {
      expect((await fast.ctx.inbound(fast.dm("71", "x0"))).status).toBe("accepted");
      // A holds the conversation (x0's turn waits); x1 is recorded by A a minute "later" than x2 by B.
      await eventually(
        () =>
          A.app.db.query(
            "t",
            A.app.db.q.selectFrom("ConversationLease").select((eb) => eb.fn.countAll<number>().as("n")),
          ),
        (r) => Number(r[0]?.n) === 1,
        10_000,
        "A's lease",
      );
      expect((await fast.ctx.inbound(fast.dm("71", "x1"))).status).toBe("accepted");
      expect((await slow.ctx.inbound(slow.dm("71", "x2"))).status).toBe("accepted");
      open();
      const sent = () => [...fast.sent, ...slow.sent].sort((p, q) => p.at - q.at || Number(p.messageId) - Number(q.messageId)).map((s) => s.text);
      await eventually(sent, (t) => t.length >= 3, 20_000, "three replies");
      expect(sent()).toEqual(["echo: x0", "echo: x1", "echo: x2"]);
    } finally {
      open();
      await A.app.stop();
      await B.app.stop();
    }
  });
});
