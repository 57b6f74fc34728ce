import type { ChildProcess } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { JobService } from "../../src/gateway/jobs/service.js";
import { Registry } from "../../src/session/registry.js";
import { IdentityStore, KvStore, openDatabase, SessionStore } from "../../src/store/index.js";
import { JobStore } from "../../src/store/jobs.js";
import { startSharedCluster } from "../support/gateway-processes.js";
import type { LoopbackPlatform } from "../support/loopback-platform.js";

/**
 * Three gateway processes on one PostgreSQL database, 300 jobs due in the
 * same minute: every process's scheduler sees all of them due, and each job
 * must run (and be sent) exactly once. A second run would make a second
 * delivery row, with its own nonce, so the platform would show it.
 */
describe("scheduled jobs with several processes on one PostgreSQL database", () => {
  const children: ChildProcess[] = [];
  let platform: LoopbackPlatform | undefined;
  afterAll(async () => {
    for (const c of children) c.kill("SIGKILL");
    await platform?.close();
  });

  it("300 jobs due in the same minute each run once", async () => {
    const cluster = await startSharedCluster();
    platform = cluster.platform;
    children.push(...cluster.gateways.map((g) => g.child));
    const { dbUrl, proxy } = cluster;
    const CHATS = 30;
    // One message per chat first: the bot has talked there, so a job can name the chat.
    for (let c = 0; c < CHATS; c++) {
      const r = await fetch(`${proxy.url}/loopback/update`, {
        method: "POST",
        body: JSON.stringify({ id: 0, chatId: `c${c}`, senderId: `u${c}`, text: `hi ${c}`, messageId: "m0", date: Date.now() }),
      });
      expect(r.status).toBe(200);
    }
    const until = async (pred: () => boolean, ms: number) => {
      const end = Date.now() + ms;
      while (!pred() && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    };
    await until(() => platform!.messages.length >= CHATS, 60_000);
    expect(platform.messages.length).toBe(CHATS);

    const db = await openDatabase({ url: dbUrl, migrate: false });
    try {
      const store = new JobStore(db);
      const jobs = new JobService({
        store,
        registry: new Registry(new SessionStore(db)),
        kv: new KvStore(db),
        identities: new IdentityStore(db),
        defaultTimezone: "UTC",
      });
      // Made for a minute ahead (making 300 takes a while on a loaded machine), then all moved to one instant just ahead.
      const later = new Date(Date.now() + 120_000);
      const texts: string[] = [];
      for (let c = 0; c < CHATS; c++) {
        const target = await jobs.locate({ platform: "telegram", chat: `c${c}` });
        for (let i = 0; i < 10; i++) {
          const text = `job ${c}-${i}`;
          texts.push(text);
          await jobs.create({ target, timing: { kind: "once", spec: later.toISOString(), timezone: "UTC" }, action: "text", text, createdBy: "test" });
        }
      }
      const due = new Date(Math.ceil((Date.now() + 1000) / 1000) * 1000);
      await db.exec("t", db.q.updateTable("ScheduledJob").set({ nextRunAt: due, spec: due.toISOString() }));
      const jobTexts = () => platform!.messages.filter((m) => m.text.startsWith("job "));
      await until(() => new Set(jobTexts().map((m) => m.text)).size >= texts.length, 120_000);
      // Settled in the ledger, then a moment more for any second run to show.
      await until(() => false, 1500);
      const counts = new Map<string, number>();
      for (const m of jobTexts()) counts.set(m.text, (counts.get(m.text) ?? 0) + 1);
      const runs = await db.query(
        "t",
        db.q
          .selectFrom("JobRun")
          .select(["status", "owner", (eb) => eb.fn.countAll<string>().as("n")])
          .groupBy(["status", "owner"]),
      );
      const byOwner = new Map<string | null, number>();
      for (const r of runs) byOwner.set(r.owner, (byOwner.get(r.owner) ?? 0) + Number(r.n));
      const deliveries = await db.query(
        "t",
        db.q
          .selectFrom("OutboundDelivery")
          .select((eb) => eb.fn.countAll<string>().as("n"))
          .where("text", "like", "job %"),
      );
      const runStatuses = await store.runCounts();
      const result = {
        jobs: texts.length,
        shownOnce: texts.filter((t) => counts.get(t) === 1).length,
        missing: texts.filter((t) => !counts.has(t)).length,
        duplicates: [...counts.values()].filter((n) => n > 1).length,
        deliveryRows: Number(deliveries[0]!.n),
        runRows: runs.reduce((n, r) => n + Number(r.n), 0),
        runStatuses,
        runsPerProcess: [...byOwner.values()].sort((a, b) => b - a),
        dedupedResends: platform.dedupedResends,
      };
      console.log(`jobs: ${JSON.stringify({ scenario: "three-processes-300-jobs", ...result })}`);
      expect(result).toMatchObject({ jobs: 300, shownOnce: 300, missing: 0, duplicates: 0, deliveryRows: 300, runRows: 300, dedupedResends: 0 });
      const settled = await store.runCounts();
      expect(settled.delivered ?? 0).toBeGreaterThanOrEqual(290); // the rest settle at their process's next round
    } finally {
      await db.close();
      await proxy.close();
    }
  }, 240_000);
});
