import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../../src/gateway/app.js";
import { ConversationDrainer } from "../../src/gateway/conversation-drain.js";
import { silentLogger } from "../../src/log.js";
import type { InboundRecord, InboundStore } from "../../src/store/inbound.js";
import type { LeaseStore } from "../../src/store/leases.js";
import { PROVIDERS } from "../support/db.js";
import { startApp } from "../support/app.js";
import { MemoryAdapter } from "../support/memory-adapter.js";

const record = (id: string): InboundRecord => ({
  id, platform: "telegram", botId: "1", eventId: id, status: "received", envelope: "{}", occurredAt: new Date(), receivedAt: new Date(), processedAt: null, sessionId: null, note: null,
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
      inbound, leases, processId: "p1", log: silentLogger,
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

describe.each(PROVIDERS)("recorded order on %s", (provider) => {
  let app: App | undefined;
  afterEach(async () => {
    await app?.stop();
    app = undefined;
  });

  it("events of one conversation recorded back to back keep their order (no two in the same millisecond)", async () => {
    const adapter = new MemoryAdapter();
    app = (await startApp(provider, [adapter])).app;
    const texts = Array.from({ length: 40 }, (_, i) => `m${i}`);
    for (const t of texts) expect((await adapter.ctx.inbound(adapter.dm("61", t))).status).toBe("accepted");
    const rows = await app.db.read((c) => c.inboundEvent.findMany({ orderBy: [{ receivedAt: "asc" }, { id: "asc" }] }));
    expect(rows.map((r) => (JSON.parse(r.envelope) as { text: string }).text)).toEqual(texts);
    const times = rows.map((r) => r.receivedAt.getTime());
    expect(times.every((t, i) => i === 0 || t > times[i - 1]!)).toBe(true);
  });
});
