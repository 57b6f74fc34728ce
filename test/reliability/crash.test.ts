import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FakeSlack } from "../fakes/slack.js";
import { FakeTelegram, type TgChat, type TgUser } from "../fakes/telegram.js";
import { freePort } from "../../tools/pg-cluster.js";
import { report, sleep, sqliteUrl } from "./helpers.js";

const RUNS = Number(process.env.CRASH_RUNS ?? 20);
const PARALLEL = Number(process.env.CRASH_PARALLEL ?? 2);
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
  const child = spawn(process.execPath, [path.resolve("bin/switchboard.mjs"), "serve"], { env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  child.stderr!.on("data", (d) => (err = (err + d).slice(-4000)));
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
 * 0. Duplicates are counted and reported; the only ones allowed are replies
 * whose request was in flight at the instant of the kill (the platform got
 * it, the gateway never heard back): Telegram and Slack offer no idempotency
 * key, so no gateway can tell those apart from lost ones (Discord's nonce
 * can, and the gateway uses it). Each run sends 2,000 messages across
 * 200 chats (Telegram DMs by long polling and Slack DMs over signed HTTP
 * events, which the "Slack" side retries with X-Slack-Retry-Num while
 * the gateway is down), kills the real `switchboard serve` process mid-way,
 * restarts it, and counts what each message got.
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

  async function oneRun(run: number): Promise<{ noReply: number; duplicates: number; outsideKill: number; late: number }> {
      const runStarted = Date.now();
      const tg = new FakeTelegram();
      const slack = new FakeSlack();
      const live = { tg, slack, gw: undefined as Gateway | undefined };
      alive.add(live);
      await Promise.all([tg.start(), slack.start()]);
      const port = await freePort();
      const env = {
        DATABASE_URL: sqliteUrl(), HTTP_PORT: String(port), DM_POLICY: "open", LOG_LEVEL: "error", CONSOLE_ENABLED: "false",
        TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_API_ROOT: tg.apiRoot,
        SLACK_BOT_TOKEN: slack.botToken, SLACK_SIGNING_SECRET: slack.signingSecret, SLACK_API_URL: slack.apiUrl,
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
            const r = await slack.postEvent(`http://127.0.0.1:${port}/slack/events`, body, attempt ? { retryNum: Math.min(attempt, 3), retryReason: "http_error" } : {});
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
      for (let c = 0; c < SL_CHATS; c++) slackEvents.push((async () => { for (let i = 0; i < perChat; i++) await postSlack(c, i); })());
      const replies = () => tg.sent().length + slack.sent().length;
      const killAt = Math.floor(MESSAGES * (0.1 + Math.random() * 0.7));
      const endKill = Date.now() + 120_000;
      while (replies() < killAt && Date.now() < endKill) await sleep(5);
      const killedAt = Date.now();
      gw.child.kill("SIGKILL");
      await gw.exited;
      gw = await startGateway(env, port);
      live.gw = gw;
      await Promise.all(slackEvents);
      const expected = [...sentAt.keys()];
      const endAll = Date.now() + 180_000;
      const texts = () => [...tg.sent().map((s) => s.text), ...slack.sent().map((s) => s.text)];
      while (new Set(texts()).size < expected.length && Date.now() < endAll) await sleep(50);
      await sleep(1000);
      const counts = new Map<string, number>();
      for (const t of texts()) counts.set(t, (counts.get(t) ?? 0) + 1);
      const at = new Map<string, number>([...tg.sent().map((s) => [s.text, s.message.date * 1000] as const), ...slack.sent().map((s) => [s.text, s.at] as const)]);
      const noReply = expected.filter((t) => !counts.has(t)).length;
      const duplicated = [...counts].filter(([, n]) => n > 1).map(([t]) => t);
      const duplicates = duplicated.length;
      // A send whose request was still in flight at the kill may have reached the platform without the
      // gateway learning it: Telegram and Slack have no idempotency key, so that one reply can show twice.
      // Anything else doubled is a bug.
      const firstAsked = new Map<string, number>();
      for (const c of [...tg.callsTo("sendMessage"), ...slack.callsTo("chat.postMessage")]) {
        const t = String(c.params["text"] ?? "");
        if (!firstAsked.has(t) && (c.status ?? 200) < 300) firstAsked.set(t, c.at);
      }
      // (The texts here have no characters that HTML or mrkdwn escaping would change.)
      const outsideKill = duplicated.filter((t) => {
        const at = firstAsked.get(t) ?? 0;
        return !(at >= killedAt - 2000 && at <= killedAt);
      }).length;
      // Any duplicate outside the kill's window is a bug: print its calls (time relative to the kill) to tell where it came from.
      for (const t of duplicated.filter((d) => !(((firstAsked.get(d) ?? 0) >= killedAt - 2000) && (firstAsked.get(d) ?? 0) <= killedAt))) {
        const calls = [...tg.callsTo("sendMessage"), ...tg.callsTo("editMessageText"), ...slack.callsTo("chat.postMessage"), ...slack.callsTo("chat.update")].filter((c) => String(c.params["text"] ?? "") === t);
        report("crash-duplicate", { run: run + 1, text: t, calls: calls.map((c) => ({ msFromKill: c.at - killedAt, status: c.status })) });
      }
      const late = expected.filter((t) => (at.get(t) ?? 0) - sentAt.get(t)! > TTL_MS).length;
      report("crash-run", { run: run + 1, seconds: Math.round((Date.now() - runStarted) / 1000), killedAfterSeconds: Math.round((killedAt - runStarted) / 1000), killedAfterReplies: killAt, messages: MESSAGES, noReply, duplicates, duplicatesInFlightAtKill: duplicates - outsideKill, late });
      gw.child.kill("SIGKILL");
      await gw.exited;
      await Promise.all([tg.close(), slack.close()]);
      alive.delete(live);
      return { noReply, duplicates, outsideKill, late };
  }

  it(`${RUNS} runs of ${MESSAGES} messages across ${CHATS} chats lose nothing, double nothing, send nothing late`, async () => {
    const totals = { runs: 0, messages: 0, accepted: 0, noReply: 0, duplicates: 0, duplicatesOutsideKill: 0, late: 0 };
    // Two runs side by side: each is paced by the platforms' declared budgets, not by the CPU.
    for (let run = 0; run < RUNS; run += PARALLEL) {
      const batch = await Promise.all(Array.from({ length: Math.min(PARALLEL, RUNS - run) }, (_, i) => oneRun(run + i)));
      for (const r of batch) {
        totals.runs++;
        totals.messages += MESSAGES;
        totals.accepted += MESSAGES - r.noReply;
        totals.noReply += r.noReply;
        totals.duplicates += r.duplicates;
        totals.duplicatesOutsideKill += r.outsideKill;
        totals.late += r.late;
      }
    }
    report("crash", totals);
    expect({ noReply: totals.noReply, duplicatesOutsideKill: totals.duplicatesOutsideKill, late: totals.late }).toEqual({ noReply: 0, duplicatesOutsideKill: 0, late: 0 });
  }, 1_800_000);
});
