/**
 * A store fault at each call site of a scheduled job's run (claim, run
 * start, the run's one transaction, its delivery, its settling), through the
 * real grammY adapter against FakeTelegram on a real SQLite file, with the
 * job clock injected (no wall-clock windows: each scheduler round is run by
 * the test). Per site, one job falls due with that site's next call failing
 * once: its message reaches the chat exactly once and the run ends
 * delivered. And a graceful stop while an agent-prompt job's turn runs,
 * then a restart on the same file: the message is delivered once.
 */
import { afterEach, describe, expect, it } from "vitest";
import { TelegramAdapter } from "../../../adapters/telegram/index.js";
import type { Agent } from "../../../src/agent/types.js";
import type { App } from "../../../src/gateway/app.js";
import { FakeTelegram, type TgChat } from "../../fakes/telegram.js";
import { eventually } from "../../support/app.js";
import { startAppOn } from "../../support/app-on.js";
import { freshMigratedSqliteUrl } from "../../support/db.js";
import { FaultPlan, LostAck } from "../../support/faults.js";
import type { StoreFaults } from "../../../src/store/index.js";

let fake: FakeTelegram | undefined;
const apps: App[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.stop().catch(() => undefined);
  await fake?.close();
  fake = undefined;
});

const T0 = new Date("2027-03-01T09:00:00Z");

async function gateway(url: string, clock: { now: Date }, opts: { faults?: StoreFaults; agentFactory?: unknown } = {}): Promise<App> {
  const adapter = new TelegramAdapter({
    token: fake!.token,
    apiRoot: fake!.apiRoot,
    mode: "polling",
    pollingTimeoutSec: 1,
    backoff: { baseMs: 20, maxMs: 200 },
  });
  const { app } = await startAppOn(
    url,
    [adapter],
    { REFLECT_EVERY_TURNS: "0" },
    {
      retryIntervalMs: 200,
      jobClock: () => clock.now,
      ...(opts.faults && { faults: opts.faults }),
      ...(opts.agentFactory ? { agentFactory: opts.agentFactory as never } : {}),
    },
  );
  apps.push(app);
  return app;
}

/** A chat the gateway has heard from (its address recorded), so a job can target it. */
async function knownChat(app: App, tag: string) {
  const user = fake!.user(tag);
  const chat = fake!.privateChat(user);
  fake!.userMessage({ chat, from: user, text: `hello ${tag}` });
  await eventually(
    () => fake!.sent({ chatId: chat.id }).length,
    (n) => n >= 1,
    20_000,
    `the greeting of ${tag}`,
  );
  await app.gateway.idle();
  return chat;
}

/** A one-off job a minute ahead of the job clock, in `chat` (a chat the gateway knows), made as the API or CLI would. */
async function oneOffJob(app: App, chat: TgChat, clock: { now: Date }, action: "text" | "agent", text: string) {
  const target = await app.jobs.service.locate({ platform: "telegram", chat: String(chat.id) });
  const due = new Date(clock.now.getTime() + 60_000);
  const job = await app.jobs.service.create({ target, timing: { kind: "once", spec: due.toISOString(), timezone: "UTC" }, action, text, createdBy: "probe" });
  return { job, due };
}

/** Runs scheduler rounds, the job clock moving `stepMs` each, until `done` holds (bounded by `maxSteps`). */
async function roundsUntil(app: App, clock: { now: Date }, done: () => Promise<boolean>, stepMs: number, maxSteps: number, what: string) {
  for (let i = 0; i < maxSteps; i++) {
    await app.jobs.runner.tick();
    if (await done()) return;
    clock.now = new Date(clock.now.getTime() + stepMs);
  }
  await eventually(done, Boolean, 20_000, what);
}

describe("scheduled jobs against store faults and a stop", () => {
  it("a store fault at each call site of a job's run: its message is delivered exactly once and the run ends delivered", async () => {
    fake = new FakeTelegram();
    await fake.start();
    const clock = { now: T0 };
    const faults = new FaultPlan();
    const app = await gateway(await freshMigratedSqliteUrl(), clock, { faults });

    const runOne = async (tag: string, site?: string) => {
      const chat = await knownChat(app, tag);
      const { job, due } = await oneOffJob(app, chat, clock, "text", `job ${tag}`);
      if (site) faults.once(site, "SQLITE_FULL");
      clock.now = due;
      const delivered = async () =>
        fake!.sent({ chatId: chat.id }).some((s) => s.text === `job ${tag}`) && (await app.jobs.service.store.get(job.id))?.lastStatus === "delivered";
      // Claims this process made go stale after 30 s of the job clock: steps of 10 s give a failed run its retry.
      await roundsUntil(app, clock, delivered, 10_000, 40, `the job of ${tag} delivered`);
      await app.gateway.idle();
      return { chat, job };
    };

    // A clean run finds the call sites a run takes.
    const before = new Map(faults.calls);
    await runOne("clean");
    const sites = [...faults.calls]
      .filter(([op, n]) => n > (before.get(op) ?? 0))
      .map(([op]) => op)
      .filter(
        (op) =>
          !/^(lease|wal|prune|budget-sweep|unsent|approval-orphans|sessions-for-review|waiting|record-inbound|commit-turn|ensure-user|bind|find-binding|conversation-address|recent-messages|recall-memories|kv-|job-get|job-insert|job-list)/.test(
            op,
          ),
      )
      .sort();
    console.log(`[durability] a job run's call sites (${sites.length}): ${sites.join(", ")}`);
    expect(sites).toEqual(expect.arrayContaining(["run-complete", "mark-sent"]));

    const rows: string[] = [];
    for (const site of sites) {
      const injected = faults.injected.get(site) ?? 0;
      const { job } = await runOne(`s-${site}`, site);
      rows.push(`${site.padEnd(24)} injected ${(faults.injected.get(site) ?? 0) - injected}  status ${(await app.jobs.service.store.get(job.id))?.lastStatus}`);
    }
    console.log(`[durability] job faults:\n${rows.join("\n")}`);
    await app.stop({ graceMs: 30_000 });
    apps.length = 0;
    const per = new Map<string, number>();
    for (const s of fake.sent()) if (s.text.startsWith("job ")) per.set(s.text, (per.get(s.text) ?? 0) + 1);
    expect([...per].filter(([, n]) => n !== 1)).toEqual([]);
    expect(per.size).toBe(sites.length + 1);
  }, 240_000);

  it("a graceful stop while an agent-prompt job's turn runs, then a restart on the same file: the answer is delivered once", async () => {
    fake = new FakeTelegram();
    await fake.start();
    const clock = { now: T0 };
    const url = await freshMigratedSqliteUrl();
    let hold = true;
    let started = 0;
    // Echoes, except a scheduled prompt: that one waits (abortably) while `hold` is set.
    const agentFactory = (): Agent => ({
      name: "held",
      async *run(req) {
        const last = [...req.messages].reverse().find((m) => m.role === "user")?.content ?? "";
        if (last.startsWith("prompt") && hold) {
          started++;
          await new Promise<void>((resolve, reject) => {
            if (req.signal?.aborted) return reject(req.signal.reason);
            req.signal?.addEventListener("abort", () => reject(req.signal!.reason), { once: true });
          });
        }
        yield { type: "done", text: `echo: ${last}`, toolRounds: 0 };
      },
    });
    const first = await gateway(url, clock, { agentFactory });
    const chat = await knownChat(first, "agentjob");
    const { job, due } = await oneOffJob(first, chat, clock, "agent", "prompt: the news");
    clock.now = due;
    void first.jobs.runner.tick();
    await eventually(
      () => started,
      (n) => n >= 1,
      20_000,
      "the job's turn running",
    );
    await first.stop({ graceMs: 30_000 });
    apps.length = 0;
    hold = false;
    clock.now = new Date(due.getTime() + 10_000);
    const second = await gateway(url, clock, { agentFactory });
    const delivered = async () => (await second.jobs.service.get(job.id)).lastStatus === "delivered";
    await roundsUntil(second, clock, delivered, 10_000, 40, "the job delivered after the restart");
    await second.stop({ graceMs: 30_000 });
    apps.length = 0;
    expect(fake.sent({ chatId: chat.id }).filter((s) => s.text === "echo: prompt: the news")).toHaveLength(1);
  }, 60_000);

  for (const site of ["run-start", "run-complete", "run-settle"]) {
    it(`the acknowledgement of ${site} is lost (the write landed): the message is delivered exactly once and the run ends delivered`, async () => {
      fake = new FakeTelegram();
      await fake.start();
      const clock = { now: T0 };
      const faults = new LostAck(site, { armed: false });
      const app = await gateway(await freshMigratedSqliteUrl(), clock, { faults });
      const chat = await knownChat(app, `ack-${site}`);
      const { job, due } = await oneOffJob(app, chat, clock, "text", "lost ack job");
      faults.arm();
      clock.now = due;
      const delivered = async () =>
        fake!.sent({ chatId: chat.id }).some((s) => s.text === "lost ack job") && (await app.jobs.service.store.get(job.id))?.lastStatus === "delivered";
      await roundsUntil(app, clock, delivered, 10_000, 40, "the job delivered");
      await app.stop({ graceMs: 30_000 });
      apps.length = 0;
      expect(faults.armed).toBe(false);
      expect(fake.sent({ chatId: chat.id }).filter((s) => s.text === "lost ack job")).toHaveLength(1);
    }, 60_000);
  }
});
