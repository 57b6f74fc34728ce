import { unlimited } from "../lib/unlimited.mjs";
import { DiscordAdapter } from "../../adapters/discord/index.js";
import { SlackAdapter } from "../../adapters/slack/index.js";
import { TelegramAdapter } from "../../adapters/telegram/index.js";
import type { Adapter, AdapterLimits } from "../../adapters/types.js";
import { startAppOn } from "../../test/support/app-on.js";
import { BENCH_ENV } from "../lib/env.js";
import { freshSqliteUrl } from "../lib/db.js";
import { discordDriver, slackDriver, telegramDriver, type PlatformDriver } from "../lib/platforms.js";
import { pick } from "../lib/mode.js";
import { progress } from "../lib/progress.js";
import { latency, r1, r3, type LatencySummary } from "../lib/stats.js";

export interface StreamResult {
  msgs_per_s: number;
  latency: LatencySummary;
  messages: number;
  seconds: number;
  /** Process CPU time (user + system) over the stream, per message. */
  cpu_ms_per_msg: number;
}

export interface E2eResult {
  params: {
    quick: boolean;
    platform: string;
    chats: number;
    messages: number;
    group_share: number;
    declared_limits: { perChat: AdapterLimits["perChat"]; global: AdapterLimits["global"] };
    offered: string;
  };
  msgs_per_s: number;
  p50_ms: number;
  p99_ms: number;
  latency: LatencySummary;
  /** The same stream with the adapter's declared rate limits lifted: what the pipeline itself sustains. */
  unthrottled: StreamResult;
}

/**
 * Sends one message in each of `count` chats as fast as the fake accepts
 * them, and stamps each reply when the fake records it. Throughput is
 * messages over first-send to last-reply; latency is per message.
 */
export async function stream(d: PlatformDriver, count: number, tag: string, label: string, timeoutMs: number): Promise<StreamResult> {
  const sentAt = new Map<string, number>();
  const lat: number[] = [];
  let cursor = d.replies().length;
  let lastAt = 0;
  const scan = () => {
    const all = d.replies();
    for (; cursor < all.length; cursor++) {
      const key = all[cursor]!.text.replace(/^echo: /, "");
      const t0 = sentAt.get(key);
      if (t0 === undefined) continue;
      sentAt.delete(key);
      lastAt = performance.now();
      lat.push(lastAt - t0);
    }
    progress(`${label}: ${lat.length}/${count}`);
    return lat.length >= count;
  };
  const waiting = d.waitFor(scan, timeoutMs);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const inflight: Promise<unknown>[] = [];
  for (let i = 0; i < count; i++) {
    const text = `m ${tag}${i}`;
    sentAt.set(text, performance.now());
    const r = d.say(i, text);
    if (r) inflight.push(r);
    if (inflight.length >= 32) await Promise.all(inflight.splice(0));
  }
  await Promise.all(inflight);
  await waiting;
  const seconds = (lastAt - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  // This process runs the gateway (or the peer) and the platform fake alike: the figure compares like with like.
  return {
    msgs_per_s: r1(count / seconds),
    latency: latency(lat),
    messages: count,
    seconds: r1(seconds),
    cpu_ms_per_msg: r3((cpu.user + cpu.system) / 1000 / count),
  };
}

export function adapterFor(d: PlatformDriver): Adapter {
  const env = d.env();
  if (d.name === "telegram")
    return env.TELEGRAM_MODE === "webhook"
      ? new TelegramAdapter({ token: env.TELEGRAM_BOT_TOKEN!, apiRoot: env.TELEGRAM_API_ROOT!, mode: "webhook", webhookSecret: env.TELEGRAM_WEBHOOK_SECRET! })
      : new TelegramAdapter({ token: env.TELEGRAM_BOT_TOKEN!, apiRoot: env.TELEGRAM_API_ROOT!, mode: "polling", pollingTimeoutSec: 1 });
  if (d.name === "discord") return new DiscordAdapter({ token: env.DISCORD_BOT_TOKEN!, apiUrl: env.DISCORD_API_URL! });
  return new SlackAdapter({ botToken: env.SLACK_BOT_TOKEN!, signingSecret: env.SLACK_SIGNING_SECRET!, apiUrl: env.SLACK_API_URL! });
}

/** Runs `d`'s stream through the real app (SQLite) with one adapter; `after` runs on the same fake while it is still up. */
export async function runE2e(
  name: "telegram" | "discord" | "slack",
  quick: boolean,
  after?: (d: PlatformDriver, chats: number) => Promise<void>,
): Promise<E2eResult> {
  const chats = pick(quick, 1000, 60, 20);
  const d = name === "telegram" ? telegramDriver(chats) : name === "discord" ? discordDriver(chats) : slackDriver(chats);
  await d.start();
  try {
    const pass = async (lift: boolean, tag: string, count: number) => {
      const adapter = adapterFor(d);
      const declared = { perChat: adapter.limits.perChat, global: adapter.limits.global };
      if (lift) unlimited(adapter);
      const { app, url } = await startAppOn(freshSqliteUrl(), [adapter], BENCH_ENV);
      await d.setEventsUrl(url);
      try {
        return { declared, r: await stream(d, count, tag, `e2e_${name}${lift ? " (limits lifted)" : ""}`, 10 * 60_000) };
      } finally {
        await app.stop();
      }
    };
    const main = await pass(false, "a", chats);
    // The lifted-limits pass runs the same stream (every chat, one message each) as the peer does.
    const free = await pass(true, "b", chats);
    if (after) await after(d, chats);
    return {
      params: {
        quick,
        platform: name,
        chats,
        messages: chats,
        group_share: 0.2,
        declared_limits: main.declared,
        offered: "one message per chat, all offered at once (32 in flight at the fake)",
      },
      msgs_per_s: main.r.msgs_per_s,
      p50_ms: main.r.latency.p50_ms,
      p99_ms: main.r.latency.p99_ms,
      latency: main.r.latency,
      unthrottled: free.r,
    };
  } finally {
    await d.close();
  }
}
