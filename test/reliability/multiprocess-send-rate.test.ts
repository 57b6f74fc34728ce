import { afterAll, describe, expect, it } from "vitest";
import { FakeTelegram } from "../fakes/telegram.js";
import { freshDatabaseUrl } from "../support/db.js";
import { freePort } from "../../tools/pg-cluster.js";
import { report, sleep } from "./helpers.js";
import { startGatewayProcess, stopGatewayProcess, type GatewayProcess } from "./multiprocess-gateways.js";
import { startRoundRobinProxy, type RoundRobinProxy } from "./multiprocess-proxy.js";
import { peakRate } from "./multiprocess-tally.js";

const PROCESSES = 3;
const CHATS = Number(process.env.MULTIPROCESS_BUDGET_CHATS ?? 300);
/** Telegram's bot-wide limit, which the fake enforces: at most this many messages in any 1 s window. */
const TELEGRAM_PER_SECOND = 30;
const WEBHOOK_SECRET = "budget-webhook-secret";

/**
 * One Telegram bot served by three processes on one PostgreSQL database
 * (shared mode), sent far more than its budget at once: one message in each
 * of 300 private chats, over the webhook's 40 parallel connections through a
 * round-robin proxy. Each process alone would send 25 a second; together,
 * drawing from one bucket in the database, they must stay within Telegram's
 * 30 a second over any 1 s window of the fake's own receive times, every
 * attempt counted (a 429 too), and still answer every message once.
 *
 * The window is the one timing assertion, and it measures the product's
 * pacing: the shared bucket grants at most 28 tokens in any second
 * (adapters/telegram/limits.ts), so a slow machine only spreads the sends
 * further apart; what it can do is bunch sends granted up to ~80 ms apart
 * (an event loop stalled between the grant and the request, or in the fake
 * before it stamps the arrival), which is the margin between 28 and 30.
 */
describe("a bot's send budget shared by several processes", () => {
  const gateways: GatewayProcess[] = [];
  let proxy: RoundRobinProxy | undefined;
  const tg = new FakeTelegram({ botLimit: { perSecond: TELEGRAM_PER_SECOND } });
  afterAll(async () => {
    for (const g of gateways) g.child.kill("SIGKILL");
    await Promise.all(gateways.map((g) => g.exited));
    await proxy?.close();
    await tg.close();
  });

  it(`${PROCESSES} processes answer ${CHATS} chats at once within Telegram's ${TELEGRAM_PER_SECOND} msgs/s bot-wide`, async () => {
    await tg.start();
    const ports = await Promise.all(Array.from({ length: PROCESSES }, () => freePort()));
    proxy = await startRoundRobinProxy(ports.map((port) => ({ host: "127.0.0.1", port })));
    const hook = `${proxy.url}/telegram/${tg.token.split(":")[0]}`;
    const env = {
      DATABASE_URL: await freshDatabaseUrl("postgresql"),
      SHARED_DATABASE: "true",
      DM_POLICY: "open",
      LOG_LEVEL: "info",
      CONSOLE_ENABLED: "false",
      TELEGRAM_BOT_TOKEN: tg.token,
      TELEGRAM_API_ROOT: tg.apiRoot,
      TELEGRAM_MODE: "webhook",
      TELEGRAM_WEBHOOK_SECRET: WEBHOOK_SECRET,
      TELEGRAM_WEBHOOK_URL: hook,
    };
    const secrets = [tg.token, WEBHOOK_SECRET];
    gateways.push(...(await Promise.all(ports.map((port, i) => startGatewayProcess(i, port, env, secrets)))));
    expect(tg.webhook?.url).toBe(hook);

    const started = Date.now();
    const users = Array.from({ length: CHATS }, (_, i) => tg.build.user(`Budget${i}`));
    tg.injectMany(users.map((from, i) => tg.build.message({ chat: tg.build.privateChat(from), from, text: `hello ${i}` })));
    const answered = () => tg.sent().filter((m) => m.text.startsWith("echo: hello ")).length;
    const end = Date.now() + 120_000;
    while (answered() < CHATS && Date.now() < end) await sleep(100);
    const seconds = (Date.now() - started) / 1000;
    await Promise.all(gateways.map((g) => stopGatewayProcess(g)));

    const attempts = tg.callsTo("sendMessage");
    const rate = peakRate(
      attempts,
      (c) => c.at,
      (c) => String(c.params.chat_id),
    );
    const replies = tg.sent().map((m) => m.text);
    // Sends in each second from the first update on: where the run was paced by the budget and where it was not busy.
    const perSecond: number[] = [];
    for (const c of attempts) perSecond[Math.floor((c.at - started) / 1000)] = (perSecond[Math.floor((c.at - started) / 1000)] ?? 0) + 1;
    const counts = {
      chats: CHATS,
      answered: answered(),
      duplicates: replies.length - new Set(replies).size,
      sendAttempts: attempts.length,
      peakSendsPerSecond: rate.peak,
      botLimit429s: tg.botLimitRejections,
      sendsPerSecondOverall: +(answered() / seconds).toFixed(1),
      seconds: +seconds.toFixed(1),
      secretLeaks: gateways.reduce((n, g) => n + g.leaks.length, 0),
      warnings: gateways.map((g) => g.problems.length),
      perSecond: Array.from(perSecond, (n) => n ?? 0),
    };
    report("multiprocess-send-rate", counts);
    for (const g of gateways) if (g.problems.length) console.log(`gateway ${g.index} logged ${g.problems.length} warnings/errors; first: ${g.problems[0]}`);
    expect({ answered: counts.answered, duplicates: counts.duplicates, botLimit429s: counts.botLimit429s, secretLeaks: counts.secretLeaks }).toEqual({
      answered: CHATS,
      duplicates: 0,
      botLimit429s: 0,
      secretLeaks: 0,
    });
    expect(rate.peak).toBeLessThanOrEqual(TELEGRAM_PER_SECOND);
  }, 240_000);
});
