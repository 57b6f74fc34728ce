import os from "node:os";
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { unlimited } from "../lib/unlimited.mjs";
import { FakeOpenAi, sse, textReply } from "../../test/fakes/openai.js";
import { startAppOn } from "../../test/support/app-on.js";
import { BENCH_ENV } from "../lib/env.js";
import { freshSqliteUrl } from "../lib/db.js";
import { pick } from "../lib/mode.js";
import { discordDriver, slackDriver, telegramDriver, type PlatformDriver } from "../lib/platforms.js";
import { progress } from "../lib/progress.js";
import { latency, r3, sleep, type LatencySummary } from "../lib/stats.js";
import { adapterFor } from "./e2e.js";

export interface PacedRun {
  rate: number;
  agent: "echo" | "model";
  latency: LatencySummary;
  /** The rate the messages really went out at (the sender's timers slip on a busy machine). */
  offered_msgs_per_s: number;
  cpu_ms_per_msg: number;
  /**
   * What held the slowest messages: the event loop's delay and GC over the
   * run, the sends that went out 20 ms or more late (the loop was held: the
   * sender, the fake and the gateway share this process), and how many of
   * the slowest 1% were in flight across such a stall. A timer, a poll or a
   * queue in the gateway would hold a message without stalling the loop.
   */
  causes: {
    event_loop_delay_p99_ms: number;
    event_loop_delay_max_ms: number;
    gc_pauses_over_10ms: number;
    gc_max_ms: number;
    late_sends: number;
    slowest_1pct: number;
    slowest_1pct_across_a_stall: number;
    load_average_1min: number;
  };
}

export interface PacedResult {
  params: { quick: boolean; platform: string; chats: number; messages_per_run: number; transport: string; limits: string; model: string };
  runs: PacedRun[];
}

/**
 * Messages at a steady `rate` (message i at start + i / rate, however late
 * the one before was answered), one chat after another, each stamped when
 * the fake records its reply: the latency a user sees at a load a busy bot
 * really has, not at saturation.
 */
export async function pacedStream(d: PlatformDriver, rate: number, count: number, tag: string, label: string): Promise<Omit<PacedRun, "rate" | "agent">> {
  const sentAt = new Map<string, number>();
  const lat: number[] = [];
  /** Each answered message: when it was sent and how long its answer took. */
  const answered: Array<{ at: number; ms: number }> = [];
  /** Sends that went out late: [due, sent]. */
  const stalls: Array<[number, number]> = [];
  let cursor = d.replies().length;
  const scan = () => {
    const all = d.replies();
    for (; cursor < all.length; cursor++) {
      const key = all[cursor]!.text.replace(/^echo: /, "");
      const t0 = sentAt.get(key);
      if (t0 === undefined) continue;
      sentAt.delete(key);
      const ms = performance.now() - t0;
      lat.push(ms);
      answered.push({ at: t0, ms });
    }
    progress(`${label}: ${lat.length}/${count}`);
    return lat.length >= count;
  };
  const waiting = d.waitFor(scan, 10 * 60_000);
  const eld = monitorEventLoopDelay({ resolution: 1 });
  const gc: number[] = [];
  const obs = new PerformanceObserver((list) => void gc.push(...list.getEntries().map((e) => e.duration)));
  obs.observe({ entryTypes: ["gc"] });
  eld.enable();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const inflight: Promise<unknown>[] = [];
  for (let i = 0; i < count; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait >= 1) await sleep(wait);
    const text = `m ${tag}${i}`;
    const now = performance.now();
    if (now - due >= 20) stalls.push([due, now]);
    sentAt.set(text, now);
    const r = d.say(i, text);
    if (r) inflight.push(r.then(() => undefined));
  }
  const sendSeconds = (performance.now() - t0) / 1000;
  await Promise.all(inflight);
  await waiting;
  const cpu = process.cpuUsage(cpu0);
  eld.disable();
  obs.disconnect();
  const slowest = [...answered].sort((a, b) => b.ms - a.ms).slice(0, Math.max(1, Math.ceil(answered.length / 100)));
  const acrossAStall = slowest.filter((m) => stalls.some(([due, sent]) => sent > m.at && due < m.at + m.ms)).length;
  return {
    latency: latency(lat),
    offered_msgs_per_s: Math.round((count - 1) / sendSeconds),
    cpu_ms_per_msg: r3((cpu.user + cpu.system) / 1000 / count),
    causes: {
      event_loop_delay_p99_ms: r3(eld.percentile(99) / 1e6),
      event_loop_delay_max_ms: r3(eld.max / 1e6),
      gc_pauses_over_10ms: gc.filter((ms) => ms > 10).length,
      gc_max_ms: r3(Math.max(0, ...gc)),
      late_sends: stalls.length,
      slowest_1pct: slowest.length,
      slowest_1pct_across_a_stall: acrossAStall,
      load_average_1min: Math.round(os.loadavg()[0]! * 10) / 10,
    },
  };
}

/**
 * A model that answers `echo: <the user's text>` in two streamed pieces, as the echo agent would, and,
 * when the request asks for it (`stream_options.include_usage`, which Switchboard sends while a meter
 * counts the call), ends its stream with the usage chunk OpenAI documents (`choices: []`, `usage`), as
 * OpenAI and the common compatible servers do. Without it every answer went through the tokenizer's
 * worker, a path only a server that ignores the field takes (its own tests: test/agent/token-counter.test.ts).
 */
export async function echoingModel(): Promise<FakeOpenAi> {
  const model = await FakeOpenAi.start();
  model.responder = (body: { messages: Array<{ role: string; content: unknown }>; stream_options?: { include_usage?: boolean } }) => {
    const last = [...body.messages].reverse().find((m) => m.role === "user");
    const text = typeof last?.content === "string" ? last.content : "";
    const reply = textReply(["echo: ", text]);
    if (body.stream_options?.include_usage) {
      const prompt = Math.ceil(JSON.stringify(body.messages).length / 4);
      const completion = Math.ceil(`echo: ${text}`.length / 4);
      const usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
      // Before the closing [DONE], as OpenAI sends it.
      reply.body?.splice(
        reply.body.length - 1,
        0,
        sse.event({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "fake", choices: [], usage }),
      );
    }
    return reply;
  };
  return model;
}

/**
 * p50/p99/p99.9 at 50 and 200 msgs/s through one platform's real adapter
 * (Telegram by webhook), with the echo agent and with a fake
 * OpenAI-compatible model, the adapter's rate limits lifted (the fakes
 * never rate-limit; 200 msgs/s is past Telegram's 30), SQLite.
 */
export async function runPaced(name: "telegram" | "discord" | "slack", quick: boolean, rates: number[] = [50, 200]): Promise<PacedResult> {
  const chats = pick(quick, 1000, 200, 20);
  const seconds = pick(quick, 20, 6, 0.5);
  const d = name === "telegram" ? telegramDriver(chats, { webhook: true }) : name === "discord" ? discordDriver(chats) : slackDriver(chats);
  await d.start();
  const model = await echoingModel();
  const runs: PacedRun[] = [];
  try {
    for (const agent of ["echo", "model"] as const) {
      const adapter = unlimited(adapterFor(d));
      const env: Record<string, string> = agent === "model" ? { OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: "bench", OPENAI_MODEL: "fake-model" } : {};
      const { app, url } = await startAppOn(freshSqliteUrl(), [adapter], { ...BENCH_ENV, ...env });
      try {
        await d.setEventsUrl(url);
        for (const rate of rates) {
          const count = Math.max(20, Math.round(rate * seconds));
          const r = await pacedStream(d, rate, count, `${agent}${rate}-`, `paced_${name} ${agent} ${rate}/s`);
          runs.push({ rate, agent, ...r });
        }
      } finally {
        await app.stop();
      }
      model.requests.length = 0;
    }
  } finally {
    await model.close();
    await d.close();
  }
  return {
    params: {
      quick,
      platform: name,
      chats,
      messages_per_run: Math.round(rates[0]! * seconds),
      transport: name === "telegram" ? "webhook" : name === "slack" ? "Events API over HTTP" : "gateway websocket",
      limits: "lifted",
      model: "echo agent; a fake OpenAI-compatible model streaming `echo: <text>` in two chunks, and its usage when asked (stream_options.include_usage)",
    },
    runs,
  };
}
