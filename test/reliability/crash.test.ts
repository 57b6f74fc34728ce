import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { FakeSlack } from "../fakes/slack.js";
import { FakeTelegram, type TgChat, type TgUser } from "../fakes/telegram.js";
import { freePort } from "../../tools/pg-cluster.js";
import { report, sleep, sqliteFileOf, sqliteUrl } from "./helpers.js";

const RUNS = Number(process.env.CRASH_RUNS ?? 20);
const PARALLEL = Number(process.env.CRASH_PARALLEL ?? 2);
/** Runs beside the CPU hog (side by side). */
const BUSY_RUNS = Number(process.env.CRASH_BUSY_RUNS ?? 2);
const MESSAGES = 2000;
const CHATS = 200;
/**
 * Split so both platforms finish together under their declared budgets
 * (Telegram 30 msgs/s for the bot, Slack 50/s): 75 Telegram chats, 125 Slack.
 */
const TG_CHATS = 75;
const SL_CHATS = CHATS - TG_CHATS;
const TTL_MS = 10 * 60_000;

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
  // CRASH_LOG_DIR=/some/dir keeps each gateway's whole stderr there (with CRASH_LOG_LEVEL=warn, say) to see what a run did.
  const keep = process.env.CRASH_LOG_DIR ? fs.createWriteStream(path.join(process.env.CRASH_LOG_DIR, `gateway-${port}-${Date.now()}.log`)) : undefined;
  child.stderr!.on("data", (d) => {
    err = (err + d).slice(-4000);
    keep?.write(d);
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const end = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the gateway exited ${child.exitCode}: ${err}`);
    try {
      const r = await fetch(`http://127.0.0.1:${port}/healthz?ready=1`);
      if (r.status === 200) return { child, exited };
    } catch {
      // not listening yet
    }
    if (Date.now() > end) throw new Error(`the gateway did not become ready: ${err}`);
    await sleep(25);
  }
}

/**
 * kill -9 at a random moment, 20 times. Lost replies and late replies must be
 * 0. Each run sends 2,000 messages across 200 chats (Telegram DMs by long
 * polling and Slack DMs over signed HTTP events, which the "Slack" side
 * retries with X-Slack-Retry-Num while the gateway is down), kills the real
 * `switchboard serve` process mid-way, reads which replies the SQLite file
 * holds `sending` at that instant, restarts it, and counts what each message
 * got. Duplicates are judged by cause, never by a clock window: a reply may
 * show twice only if it was `sending` at the kill (handed to the platform,
 * its answer never recorded) and only on Telegram, which has no way to ask
 * what was posted. Slack replies carry their delivery key in the message
 * metadata and are looked up before a resend, so Slack shows none twice
 * (Discord's nonce does the same, tested elsewhere).
 */
describe("crash: kill -9 at a random moment, restart", () => {
  const alive = new Set<{ tg: FakeTelegram; slack: FakeSlack; gw: Gateway | undefined }>();
  afterEach(async () => {
    for (const l of alive) {
      l.gw?.child.kill("SIGKILL");
      await l.gw?.exited;
      await Promise.all([l.tg.close(), l.slack.close()]);
    }
    alive.clear();
  });

  async function oneRun(run: number): Promise<RunCounts> {
    const runStarted = Date.now();
    const tg = new FakeTelegram();
    const slack = new FakeSlack();
    const live = { tg, slack, gw: undefined as Gateway | undefined };
    alive.add(live);
    await Promise.all([tg.start(), slack.start()]);
    const port = await freePort();
    const env = {
      DATABASE_URL: sqliteUrl(),
      HTTP_PORT: String(port),
      DM_POLICY: "open",
      LOG_LEVEL: process.env.CRASH_LOG_LEVEL ?? "error",
      CONSOLE_ENABLED: "false",
      TELEGRAM_BOT_TOKEN: tg.token,
      TELEGRAM_API_ROOT: tg.apiRoot,
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_SIGNING_SECRET: slack.signingSecret,
      SLACK_API_URL: slack.apiUrl,
    };
    let gw = await startGateway(env, port);
    live.gw = gw;
    const sentAt = new Map<string, number>();
    const tgChats: Array<{ user: TgUser; chat: TgChat }> = Array.from({ length: TG_CHATS }, (_, i) => {
      const user = tg.user(`u${i}`);
      return { user, chat: tg.privateChat(user) };
    });
    const perChat = MESSAGES / CHATS;
    // Slack delivers each event until it gets a 200, as Slack does, marking redeliveries.
    const slackEvents: Promise<void>[] = [];
    const postSlack = async (c: number, i: number) => {
      const text = `sl ${c}-${i}`;
      const body = slack.events.message({ channel: `D${String(c).padStart(8, "0")}`, user: `U${String(c).padStart(8, "0")}`, text });
      sentAt.set(`echo: ${text}`, Date.now());
      for (let attempt = 0; ; attempt++) {
        try {
          const r = await slack.postEvent(
            `http://127.0.0.1:${port}/slack/events`,
            body,
            attempt ? { retryNum: Math.min(attempt, 3), retryReason: "http_error" } : {},
          );
          if (r.status === 200) return;
        } catch {
          // connection refused while the gateway is down
        }
        await sleep(100);
      }
    };
    for (let i = 0; i < perChat; i++) {
      for (let c = 0; c < TG_CHATS; c++) {
        const text = `tg ${c}-${i}`;
        sentAt.set(`echo: ${text}`, Date.now());
        tg.userMessage({ chat: tgChats[c]!.chat, from: tgChats[c]!.user, text });
      }
    }
    for (let c = 0; c < SL_CHATS; c++)
      slackEvents.push(
        (async () => {
          for (let i = 0; i < perChat; i++) await postSlack(c, i);
        })(),
      );
    const replies = () => tg.sent().length + slack.sent().length;
    const killAt = Math.floor(MESSAGES * (0.1 + Math.random() * 0.7));
    const endKill = Date.now() + 120_000;
    while (replies() < killAt && Date.now() < endKill) await sleep(5);
    const killedAt = Date.now();
    gw.child.kill("SIGKILL");
    await gw.exited;
    // What the database held at the kill: the replies handed to a platform whose answer was never recorded.
    const sendingAtKill = repliesSending(sqliteFileOf(env.DATABASE_URL));
    gw = await startGateway(env, port);
    live.gw = gw;
    await Promise.all(slackEvents);
    const expected = [...sentAt.keys()];
    const endAll = Date.now() + 180_000;
    const texts = () => [...tg.sent().map((s) => s.text), ...slack.sent().map((s) => s.text)];
    while (new Set(texts()).size < expected.length && Date.now() < endAll) await sleep(50);
    await sleep(1000);
    gw.child.kill("SIGKILL");
    await gw.exited;
    const attempts = attemptsByText(sqliteFileOf(env.DATABASE_URL));
    const counts = new Map<string, number>();
    for (const t of texts()) counts.set(t, (counts.get(t) ?? 0) + 1);
    const at = new Map<string, number>([
      ...tg.sent().map((s) => [s.text, s.message.date * 1000] as const),
      ...slack.sent().map((s) => [s.text, s.at] as const),
    ]);
    const noReply = expected.filter((t) => !counts.has(t)).length;
    const duplicated = [...counts].filter(([, n]) => n > 1);
    // Causal, not by the clock: a Telegram reply may show more than once only as often as the database
    // says it was handed to Telegram without the answer coming back: left `sending` at the kill, or sent
    // again after a call that timed out (each hand-over is counted in `attempts` before the call).
    // Telegram has no read-back. Slack replies are looked up by their metadata before any resend, so
    // no Slack reply may show twice.
    const explained = ([t, n]: [string, number]) => t.startsWith("echo: tg ") && n <= (attempts.get(t) ?? 0);
    const unexplained = duplicated.filter((d) => !explained(d));
    const unexplainedReports = unexplained.map(([t, n]) => {
      const calls = [
        ...tg.callsTo("sendMessage"),
        ...tg.callsTo("editMessageText"),
        ...slack.callsTo("chat.postMessage"),
        ...slack.callsTo("chat.update"),
      ].filter((c) => String(c.params.text ?? "") === t);
      return {
        run: run + 1,
        text: t,
        shown: n,
        sendingAtKill: sendingAtKill.has(t),
        calls: calls.map((c) => ({
          method: c.method,
          msFromKill: c.at - killedAt,
          status: c.status,
          replyTo: c.params.reply_parameters ?? c.params.thread_ts ?? null,
        })),
      };
    });
    const dupOf = (prefix: string) => duplicated.filter(([t]) => t.startsWith(prefix)).length;
    const tgDuplicates = duplicated.filter(([t]) => t.startsWith("echo: tg "));
    const sendingOf = (prefix: string) => [...sendingAtKill].filter((t) => t.startsWith(prefix)).length;
    const readBacks = slack.callsTo("conversations.history").length + slack.callsTo("conversations.replies").length;
    const edits = tg.callsTo("editMessageText").length + slack.callsTo("chat.update").length;
    const late = expected.filter((t) => (at.get(t) ?? 0) - sentAt.get(t)! > TTL_MS).length;
    const r: RunCounts = {
      noReply,
      late,
      unexplained: unexplained.length,
      telegramDuplicates: dupOf("echo: tg "),
      slackDuplicates: dupOf("echo: sl "),
      telegramDuplicatesSendingAtKill: tgDuplicates.filter(([t]) => sendingAtKill.has(t)).length,
      telegramDuplicatesRetried: tgDuplicates.filter(([t]) => !sendingAtKill.has(t)).length,
      telegramSendingAtKill: sendingOf("echo: tg "),
      slackSendingAtKill: sendingOf("echo: sl "),
      slackReadBacks: readBacks,
      edits,
    };
    report("crash-run", {
      run: run + 1,
      seconds: Math.round((Date.now() - runStarted) / 1000),
      killedAfterSeconds: Math.round((killedAt - runStarted) / 1000),
      killedAfterReplies: killAt,
      messages: MESSAGES,
      ...r,
    });
    // Anything doubled that the database does not explain is a bug: print where it came from.
    for (const u of unexplainedReports) report("crash-duplicate", { ...u, rows: rowsOf(sqliteFileOf(env.DATABASE_URL), u.text) });
    await Promise.all([tg.close(), slack.close()]);
    alive.delete(live);
    return r;
  }

  async function runAll(runs: number, parallel: number, scenario: string): Promise<void> {
    const totals = {
      runs: 0,
      messages: 0,
      noReply: 0,
      late: 0,
      unexplained: 0,
      telegramDuplicates: 0,
      telegramDuplicatesSendingAtKill: 0,
      telegramDuplicatesRetried: 0,
      slackDuplicates: 0,
      telegramSendingAtKill: 0,
      slackSendingAtKill: 0,
      slackReadBacks: 0,
      edits: 0,
    };
    // Runs side by side: each is paced by the platforms' declared budgets, not by the CPU.
    for (let run = 0; run < runs; run += parallel) {
      const batch = await Promise.all(Array.from({ length: Math.min(parallel, runs - run) }, (_, i) => oneRun(run + i)));
      for (const r of batch) {
        totals.runs++;
        totals.messages += MESSAGES;
        for (const k of Object.keys(r) as Array<keyof RunCounts>) totals[k] += r[k];
      }
    }
    report(scenario, totals);
    expect({ noReply: totals.noReply, late: totals.late, unexplainedDuplicates: totals.unexplained, slackDuplicates: totals.slackDuplicates }).toEqual({
      noReply: 0,
      late: 0,
      unexplainedDuplicates: 0,
      slackDuplicates: 0,
    });
  }

  it(`${RUNS} runs of ${MESSAGES} messages across ${CHATS} chats lose nothing, send nothing late, double no Slack reply and only Telegram replies in flight at the kill`, async () => {
    await runAll(RUNS, PARALLEL, "crash");
  }, 1_800_000);

  // The test of the test: the verdicts hold on a machine busy with other work (a process spinning on every core).
  it(`${BUSY_RUNS} runs beside a CPU hog on every core hold the same verdicts`, async () => {
    const hogs = Array.from({ length: os.availableParallelism() }, () => spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
    try {
      await runAll(BUSY_RUNS, BUSY_RUNS, "crash-busy");
    } finally {
      for (const h of hogs) h.kill("SIGKILL");
    }
  }, 900_000);
});

interface RunCounts {
  noReply: number;
  late: number;
  /** Replies shown more than once that the database does not explain: always a bug. */
  unexplained: number;
  telegramDuplicates: number;
  /** ...of which the database held `sending` at the kill. */
  telegramDuplicatesSendingAtKill: number;
  /** ...of which were handed over again in one process after a call whose answer never came (a timeout, a dropped connection). */
  telegramDuplicatesRetried: number;
  slackDuplicates: number;
  telegramSendingAtKill: number;
  slackSendingAtKill: number;
  /** conversations.history / .replies calls: the read-backs before resending Slack replies left sending. */
  slackReadBacks: number;
  /**
   * Streamed drafts edited in place. A draft has no delivery row, so a draft a crash left behind
   * and its replayed reply would count as unexplained (shown twice, handed over once).
   */
  edits: number;
}

/** The delivery rows of one reply text and their events' states (to tell where a duplicate came from). */
function rowsOf(file: string, text: string): unknown[] {
  const db = new Database(file, { fileMustExist: true });
  try {
    return db
      .prepare(
        `SELECT d."status", d."attempts", d."createdAt", d."sentAt", d."platformMessageId", i."status" AS "event" FROM "OutboundDelivery" d LEFT JOIN "InboundEvent" i ON i."id" = d."inboundId" WHERE d."text" = ?`,
      )
      .all(text);
  } finally {
    db.close();
  }
}

/** How many times each reply was handed to its platform, as the database counted it. */
function attemptsByText(file: string): Map<string, number> {
  const db = new Database(file, { fileMustExist: true });
  try {
    const rows = db.prepare(`SELECT "text", "attempts" FROM "OutboundDelivery"`).all() as Array<{ text: string; attempts: number }>;
    return new Map(rows.map((r) => [r.text, Number(r.attempts)]));
  } finally {
    db.close();
  }
}

/** The texts of replies left `sending` in a killed gateway's SQLite file (read before the restart). */
function repliesSending(file: string): Set<string> {
  const db = new Database(file, { fileMustExist: true });
  try {
    const rows = db.prepare(`SELECT "text" FROM "OutboundDelivery" WHERE "status" = 'sending'`).all() as Array<{ text: string }>;
    return new Set(rows.map((r) => r.text));
  } finally {
    db.close();
  }
}
