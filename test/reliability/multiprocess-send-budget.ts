/**
 * One Telegram bot served by several `switchboard serve` processes on one
 * PostgreSQL database (shared mode), sent far more than its budget at once:
 * one message in each of `chats` private chats, over the webhook's parallel
 * connections through a round-robin proxy. Measured at the fake's own
 * receive times: the most sendMessage attempts in any 1 s window (a 429
 * counted too), and whether every message was answered once. The
 * reliability test (multiprocess-send-rate.test.ts) asserts on it; the
 * bench (bench/scenarios/cross-process.ts) reports it against issue 31's
 * target.
 */
// Not ./helpers.js: the bench runs this too, and must load nothing that imports vitest (test/boundary.test.ts).
import { setTimeout as sleep } from "node:timers/promises";
import { FakeTelegram } from "../fakes/telegram.js";
import { freePort } from "../../tools/pg-cluster.js";
import { sharedTelegramEnv, startGatewayProcess, stopGatewayProcess, type GatewayProcess } from "./multiprocess-gateways.js";
import { startRoundRobinProxy, type RoundRobinProxy } from "./multiprocess-proxy.js";
import { peakRate } from "./peak-rate.js";

/** Telegram's bot-wide limit, which the fake enforces: at most this many messages in any 1 s window. */
export const TELEGRAM_PER_SECOND = 30;
const WEBHOOK_SECRET = "budget-webhook-secret";

export interface SendBudgetRun {
  processes: number;
  chats: number;
  answered: number;
  duplicates: number;
  sendAttempts: number;
  peakSendsPerSecond: number;
  botLimit429s: number;
  sendsPerSecondOverall: number;
  seconds: number;
  secretLeaks: number;
  /** Warning and error lines each process logged (the first of each is in `firstProblems`). */
  warnings: number[];
  firstProblems: string[];
  /** Sends in each second from the first update on. */
  perSecond: number[];
}

export async function runSharedSendBudget(o: { databaseUrl: string; processes: number; chats: number; timeoutMs?: number }): Promise<SendBudgetRun> {
  const gateways: GatewayProcess[] = [];
  let proxy: RoundRobinProxy | undefined;
  const tg = new FakeTelegram({ botLimit: { perSecond: TELEGRAM_PER_SECOND } });
  try {
    await tg.start();
    const ports = await Promise.all(Array.from({ length: o.processes }, () => freePort()));
    proxy = await startRoundRobinProxy(ports.map((port) => ({ host: "127.0.0.1", port })));
    const hook = `${proxy.url}/telegram/${tg.token.split(":")[0]}`;
    const env = sharedTelegramEnv({ databaseUrl: o.databaseUrl, token: tg.token, apiRoot: tg.apiRoot, hook, webhookSecret: WEBHOOK_SECRET });
    const secrets = [tg.token, WEBHOOK_SECRET];
    gateways.push(...(await Promise.all(ports.map((port, i) => startGatewayProcess(i, port, env, secrets)))));
    if (tg.webhook?.url !== hook) throw new Error(`the webhook was set to ${tg.webhook?.url ?? "nothing"}, not ${hook}`);

    const started = Date.now();
    const users = Array.from({ length: o.chats }, (_, i) => tg.build.user(`Budget${i}`));
    tg.injectMany(users.map((from, i) => tg.build.message({ chat: tg.build.privateChat(from), from, text: `hello ${i}` })));
    const answered = () => tg.sent().filter((m) => m.text.startsWith("echo: hello ")).length;
    const end = Date.now() + (o.timeoutMs ?? 120_000);
    while (answered() < o.chats && Date.now() < end) await sleep(100);
    const seconds = (Date.now() - started) / 1000;
    await Promise.all(gateways.map((g) => stopGatewayProcess(g)));

    const attempts = tg.callsTo("sendMessage");
    const rate = peakRate(
      attempts,
      (c) => c.at,
      (c) => String(c.params.chat_id),
    );
    const replies = tg.sent().map((m) => m.text);
    const perSecond: number[] = [];
    for (const c of attempts) {
      const s = Math.floor((c.at - started) / 1000);
      perSecond[s] = (perSecond[s] ?? 0) + 1;
    }
    return {
      processes: o.processes,
      chats: o.chats,
      answered: answered(),
      duplicates: replies.length - new Set(replies).size,
      sendAttempts: attempts.length,
      peakSendsPerSecond: rate.peak,
      botLimit429s: tg.botLimitRejections,
      sendsPerSecondOverall: +(answered() / seconds).toFixed(1),
      seconds: +seconds.toFixed(1),
      secretLeaks: gateways.reduce((n, g) => n + g.leaks.length, 0),
      warnings: gateways.map((g) => g.problems.length),
      firstProblems: gateways.flatMap((g) => (g.problems[0] ? [`gateway ${g.index}: ${g.problems[0]}`] : [])),
      perSecond: Array.from(perSecond, (n) => n ?? 0),
    };
  } finally {
    for (const g of gateways) if (g.child.exitCode === null && g.child.signalCode === null) g.child.kill("SIGKILL");
    await Promise.all(gateways.map((g) => g.exited));
    await proxy?.close();
    await tg.close();
  }
}
