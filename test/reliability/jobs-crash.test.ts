import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import Sqlite from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { FakeSlack } from "../fakes/slack.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { freePort } from "../../tools/pg-cluster.js";
import { JobService } from "../../src/gateway/jobs/service.js";
import { Registry } from "../../src/session/registry.js";
import { IdentityStore, KvStore, openDatabase, SessionStore } from "../../src/store/index.js";
import { JobStore } from "../../src/store/jobs.js";
import { report, sleep, sqliteFileOf, sqliteUrl } from "./helpers.js";

const JOBS = 100;
const CHATS = 20;
const GRACE_MS = 10 * 60_000;

interface Gateway {
  child: ChildProcess;
  exited: Promise<void>;
}

async function startGateway(env: Record<string, string>, port: number): Promise<Gateway> {
  const child = spawn(process.execPath, [path.resolve("bin/switchboard.mjs"), "serve"], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  child.stderr!.on("data", (d) => (err = (err + d).slice(-4000)));
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const end = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the gateway exited ${child.exitCode}: ${err}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz?ready=1`)).status === 200) return { child, exited };
    } catch {
      // not listening yet
    }
    if (Date.now() > end) throw new Error(`the gateway did not become ready: ${err}`);
    await sleep(25);
  }
}

function rows<T>(file: string, sql: string): T[] {
  const db = new Sqlite(file, { fileMustExist: true, readonly: true });
  try {
    return db.prepare(sql).all() as T[];
  } finally {
    db.close();
  }
}

/**
 * 100 jobs (half into Telegram DMs, half into Slack DMs) fall due over a few
 * seconds while the real `switchboard serve` is killed with SIGKILL and
 * restarted. Each must be shown exactly once: a job's run is one database
 * transaction with its delivery row, so a run cut short is run again (never
 * twice over), and a delivery cut short is sent once by the recovery. The
 * only allowed duplicate is Telegram's documented in-flight window: a
 * message the database held `sending` at the kill (Slack is read back by
 * its metadata first). None may be later than the misfire grace.
 */
describe("scheduled jobs: kill -9 and restart while they fall due", () => {
  const live: Array<{ tg: FakeTelegram; slack: FakeSlack; gw?: Gateway }> = [];
  afterEach(async () => {
    for (const l of live) {
      l.gw?.child.kill("SIGKILL");
      await l.gw?.exited;
      await Promise.all([l.tg.close(), l.slack.close()]);
    }
    live.length = 0;
  });

  it(`${JOBS} jobs due during a kill -9 and restart are each delivered once`, async () => {
    const tg = new FakeTelegram();
    const slack = new FakeSlack();
    const l: { tg: FakeTelegram; slack: FakeSlack; gw?: Gateway } = { tg, slack };
    live.push(l);
    await Promise.all([tg.start(), slack.start()]);
    const port = await freePort();
    const env = {
      DATABASE_URL: sqliteUrl(),
      HTTP_PORT: String(port),
      DM_POLICY: "open",
      LOG_LEVEL: "error",
      CONSOLE_ENABLED: "false",
      TELEGRAM_BOT_TOKEN: tg.token,
      TELEGRAM_API_ROOT: tg.apiRoot,
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_SIGNING_SECRET: slack.signingSecret,
      SLACK_API_URL: slack.apiUrl,
    };
    const file = sqliteFileOf(env.DATABASE_URL);
    l.gw = await startGateway(env, port);
    // The bot talks in each chat first, so a job can name it.
    const tgChats: string[] = [];
    for (let c = 0; c < CHATS / 2; c++) {
      const user = tg.user(`u${c}`);
      const chat = tg.privateChat(user);
      tgChats.push(String(chat.id));
      tg.userMessage({ chat, from: user, text: `hi tg ${c}` });
      const body = slack.events.message({ channel: `D${String(c).padStart(8, "0")}`, user: `U${String(c).padStart(8, "0")}`, text: `hi sl ${c}` });
      expect((await slack.postEvent(`http://127.0.0.1:${port}/slack/events`, body)).status).toBe(200);
    }
    const seeded = Date.now() + 60_000;
    while (tg.sent().length + slack.sent().length < CHATS && Date.now() < seeded) await sleep(25);
    expect(tg.sent().length + slack.sent().length).toBe(CHATS);

    // Made beside the running gateway, on the same SQLite file (WAL: another process may write).
    const db = await openDatabase({ url: env.DATABASE_URL, migrate: false });
    const due = new Map<string, number>();
    try {
      const jobs = new JobService({
        store: new JobStore(db),
        registry: new Registry(new SessionStore(db)),
        kv: new KvStore(db),
        identities: new IdentityStore(db),
        defaultTimezone: "UTC",
      });
      const targets = [
        ...tgChats.map((chat) => ({ platform: "telegram", chat })),
        ...Array.from({ length: CHATS / 2 }, (_, c) => ({ platform: "slack", chat: `D${String(c).padStart(8, "0")}` })),
      ];
      const located = await Promise.all(targets.map((t) => jobs.locate(t)));
      // Made for later (making them takes a while on a loaded machine), then moved to fall due one every 60 ms from just ahead.
      const made: Array<{ id: string; text: string }> = [];
      for (let i = 0; i < JOBS; i++) {
        const text = `job ${i < JOBS / 2 ? "tg" : "sl"} ${i}`;
        const later = new Date(Date.now() + 600_000).toISOString();
        made.push({
          text,
          id: (
            await jobs.create({
              target: located[(i < JOBS / 2 ? 0 : CHATS / 2) + (i % (CHATS / 2))]!,
              timing: { kind: "once", spec: later, timezone: "UTC" },
              action: "text",
              text,
              createdBy: "test",
            })
          ).id,
        });
      }
      const t0 = Date.now() + 1000;
      for (const [i, m] of made.entries()) {
        const at = new Date(t0 + i * 60);
        due.set(m.text, at.getTime());
        await db.exec("t", db.q.updateTable("ScheduledJob").set({ nextRunAt: at, spec: at.toISOString() }).where("id", "=", m.id));
      }
    } finally {
      await db.close();
    }
    const texts = () => [...tg.sent().map((s) => s.text), ...slack.sent().map((s) => s.text)].filter((t) => t.startsWith("job "));
    const killAfter = Math.floor(JOBS * (0.2 + Math.random() * 0.5));
    const endKill = Date.now() + 60_000;
    while (texts().length < killAfter && Date.now() < endKill) await sleep(5);
    const shownAtKill = texts().length;
    l.gw.child.kill("SIGKILL");
    await l.gw.exited;
    const sendingAtKill = new Set(rows<{ text: string }>(file, `SELECT "text" FROM "OutboundDelivery" WHERE "status" = 'sending'`).map((r) => r.text));
    const runsAtKill = rows<{ status: string; n: number }>(file, `SELECT "status", COUNT(*) AS "n" FROM "JobRun" GROUP BY "status"`);
    await sleep(500);
    l.gw = await startGateway(env, port);
    const endAll = Date.now() + 120_000;
    while (new Set(texts()).size < JOBS && Date.now() < endAll) await sleep(50);
    // Settled in the ledger (the scheduler marks runs from their deliveries each second).
    const settled = Date.now() + 20_000;
    while (Date.now() < settled && rows<{ n: number }>(file, `SELECT COUNT(*) AS "n" FROM "JobRun" WHERE "status" = 'sending'`)[0]!.n > 0) await sleep(100);
    await sleep(1000);
    l.gw.child.kill("SIGKILL");
    await l.gw.exited;

    const counts = new Map<string, number>();
    for (const t of texts()) counts.set(t, (counts.get(t) ?? 0) + 1);
    const shownAt = new Map<string, number>([
      ...tg.sent().map((s) => [s.text, s.message.date * 1000] as const),
      ...slack.sent().map((s) => [s.text, s.at] as const),
    ]);
    const attempts = new Map(
      rows<{ text: string; attempts: number }>(file, `SELECT "text","attempts" FROM "OutboundDelivery"`).map((r) => [r.text, Number(r.attempts)]),
    );
    const duplicated = [...counts].filter(([, n]) => n > 1);
    const explained = ([t, n]: [string, number]) => t.startsWith("job tg ") && sendingAtKill.has(t) && n <= (attempts.get(t) ?? 0);
    const perJob = rows<{ n: number }>(file, `SELECT COUNT(*) AS "n" FROM "JobRun" GROUP BY "jobId"`);
    const deliveryRows = rows<{ n: number }>(file, `SELECT COUNT(*) AS "n" FROM "OutboundDelivery" WHERE "text" LIKE 'job %'`)[0]!.n;
    const runStatuses = Object.fromEntries(
      rows<{ status: string; n: number }>(file, `SELECT "status", COUNT(*) AS "n" FROM "JobRun" GROUP BY "status"`).map((r) => [r.status, r.n]),
    );
    const lateness = [...due].map(([t, at]) => (shownAt.get(t) ?? Infinity) - at);
    const r = {
      jobs: JOBS,
      shownAtKill,
      runsAtKill: Object.fromEntries(runsAtKill.map((x) => [x.status, x.n])),
      shownOnce: [...due.keys()].filter((t) => counts.get(t) === 1).length,
      missing: [...due.keys()].filter((t) => !counts.has(t)).length,
      telegramDuplicates: duplicated.filter(([t]) => t.startsWith("job tg ")).length,
      slackDuplicates: duplicated.filter(([t]) => t.startsWith("job sl ")).length,
      unexplainedDuplicates: duplicated.filter((d) => !explained(d)).length,
      sendingAtKill: [...sendingAtKill].filter((t) => t.startsWith("job ")).length,
      runRowsPerJobMax: Math.max(...perJob.map((p) => p.n)),
      jobsWithRuns: perJob.length,
      deliveryRows,
      runStatuses,
      lateOverGrace: lateness.filter((ms) => ms > GRACE_MS).length,
      maxLatenessMs: Math.round(Math.max(...lateness)),
    };
    report("jobs-crash", r);
    expect(r).toMatchObject({
      missing: 0,
      slackDuplicates: 0,
      unexplainedDuplicates: 0,
      runRowsPerJobMax: 1,
      jobsWithRuns: JOBS,
      deliveryRows: JOBS,
      lateOverGrace: 0,
    });
    expect(runStatuses).toEqual({ delivered: JOBS });
  }, 300_000);
});
