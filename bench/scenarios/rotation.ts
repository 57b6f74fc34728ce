import type { ReplyAddress } from "../../adapters/types.js";
import { freshSqliteUrl } from "../lib/db.js";
import { pick } from "../lib/mode.js";
import { progress } from "../lib/progress.js";
import { latency, sleep, type LatencySummary } from "../lib/stats.js";
import { CoreDriver, withTimeout } from "./core.js";

export interface RotationResult {
  params: { quick: boolean; provider: string; samples: number; background_rate_per_s: number; concurrent: number };
  p50_ms: number;
  p99_ms: number;
  latency: LatencySummary;
  concurrent: { rotated: number; already_started: number; other: number; replies: number };
}

/** `/new` latency while a closed loop of echo traffic runs, then 100 concurrent `/new` in one chat. */
const BACKGROUND_RATE = 500;

export async function runRotation(quick: boolean): Promise<RotationResult> {
  const samples = pick(quick, 200, 40, 10);
  const d = new CoreDriver();
  const replies: { chat: string; text: string; at: number }[] = [];
  let waiter: ((r: { text: string; at: number }) => void) | undefined;
  await d.start(freshSqliteUrl());
  const inner = d.adapter.onSend;
  d.adapter.onSend = (to: ReplyAddress, text: string) => {
    if (to.chatId.startsWith("rot")) {
      const r = { chat: to.chatId, text, at: performance.now() };
      replies.push(r);
      waiter?.(r);
      return;
    }
    inner(to, text);
  };
  let ev = 0;
  const say = (chat: string, text: string) => d.adapter.ctx.inbound(d.adapter.envelope(chat, chat, false, text, `rot-ev-${ev++}`)).catch(() => d.errors++);
  try {
    const chats = 10;
    for (let c = 0; c < chats + 1; c++) {
      const got = new Promise<unknown>((r) => (waiter = r));
      void say(`rot${c}`, "hello");
      await withTimeout(got, 30_000, () => "rotation warm-up");
    }
    // Background load: echo messages offered at a fixed 500 msgs/s across 500 chats (the rate the overhead figure uses), never awaited until the end.
    const rate = BACKGROUND_RATE;
    let stop = false;
    const bg = (async () => {
      const t0 = performance.now();
      let sent = 0;
      d.onDone = () => {};
      while (!stop) {
        const due = Math.floor(((performance.now() - t0) * rate) / 1000);
        while (sent < due) d.send(sent++, 500);
        await sleep(2);
      }
    })();
    const lat: number[] = [];
    for (let i = 0; i < samples; i++) {
      const got = new Promise<{ at: number }>((r) => (waiter = r));
      const t0 = performance.now();
      void say(`rot${i % chats}`, "/new");
      const r = await withTimeout(got, 30_000, () => `/new sample ${i}`);
      lat.push(r.at - t0);
      progress(`rotation: /new ${i + 1}/${samples}`);
    }
    stop = true;
    await bg;
    waiter = undefined;
    // 100 concurrent /new in one chat.
    const burstChat = `rot${chats}`;
    const before = replies.length;
    for (let i = 0; i < 100; i++) void say(burstChat, "/new");
    const end = Date.now() + 30_000;
    while (replies.length - before < 100 && Date.now() < end) await sleep(20);
    await sleep(200);
    const burst = replies.slice(before).filter((r) => r.chat === burstChat);
    const already = burst.filter((r) => /already started/i.test(r.text)).length;
    const rotated = burst.filter((r) => /fresh|new session|started/i.test(r.text) && !/already/i.test(r.text)).length;
    const l = latency(lat);
    return {
      params: { quick, provider: "sqlite", samples, background_rate_per_s: rate, concurrent: 100 },
      p50_ms: l.p50_ms,
      p99_ms: l.p99_ms,
      latency: l,
      concurrent: { rotated, already_started: already, other: burst.length - already - rotated, replies: burst.length },
    };
  } finally {
    await d.stop();
  }
}
