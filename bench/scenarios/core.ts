import { BenchAdapter } from "../lib/memory-adapter.js";
import { startAppOn } from "../../test/support/app-on.js";
import { BENCH_ENV } from "../lib/env.js";
import { freshUrl } from "../lib/db.js";
import { pick } from "../lib/mode.js";
import { progress } from "../lib/progress.js";
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { latency, median, r1, r3, sleep, windowRates, type LatencySummary } from "../lib/stats.js";
import { eventOfReply, messageText, workItem } from "../lib/workload.js";
import type { App } from "../../src/gateway/app.js";
import { PostgresDatabase } from "../../src/store/postgres/database.js";
import { SqliteDatabase } from "../../src/store/sqlite/database.js";

export interface CoreParams {
  quick: boolean;
  chats: number;
  messages: number;
  /** The throughput phase stops at `messages` or after this long, whichever comes first (the run's time budget). */
  maxSeconds: number;
  window: number;
  latencyRate: number;
  latencyMessages: number;
}

export interface CoreResult {
  params: CoreParams & {
    provider: string;
    windows: number;
    messages_done: number;
    time_capped: boolean;
    messages_per_commit: number | null;
    statements_per_message: number | null;
    /** The share of the throughput phase's messages that were a chat's first (the floor replays the same share). */
    first_message_share: number | null;
  };
  msgs_per_s: number;
  window_rates_median: number;
  window_rates: number[];
  throughput_latency: LatencySummary;
  overhead_at_rate: LatencySummary & { offered_per_s: number; achieved_per_s: number };
  /** SQL statements the store sent per message in the throughput phase (every statement, transactions' BEGIN/COMMIT and savepoints included). */
  statements_per_msg: number;
  /** The same statements by the store op that ran them, per message (a SQLite group's BEGIN IMMEDIATE/COMMIT are "group ..."). */
  statements_by_op: Record<string, number>;
  /**
   * A steady chat's statements (issue #19's "one inbound message, one reply"): 1,000 messages on 100 chats
   * that each had a first message already (the figure above counts new chats, where most messages are a
   * chat's first), same window; with the breakdown by op.
   */
  statements_per_msg_steady: number;
  statements_by_op_steady: Record<string, number>;
  /** This process's CPU time (user + system) over the throughput phase, per message: the core and the in-process adapter. */
  cpu_ms_per_msg: number;
  /** What the overhead run's tail is made of: event-loop delay (perf_hooks, 1 ms resolution), GC pauses, and commit batching. */
  overhead_causes: {
    event_loop_delay_p50_ms: number;
    event_loop_delay_p99_ms: number;
    event_loop_delay_max_ms: number;
    gc_pauses: number;
    gc_total_ms: number;
    gc_max_ms: number;
    messages_per_commit: number | null;
  };
  errors: number;
}

export function coreParams(quick: boolean): CoreParams {
  return pick(
    quick,
    { quick, chats: 10_000, messages: 100_000, maxSeconds: 20, window: 64, latencyRate: 500, latencyMessages: 5000 },
    { quick, chats: 1000, messages: 5000, maxSeconds: 4, window: 64, latencyRate: 500, latencyMessages: 500 },
    { quick, chats: 200, messages: 600, maxSeconds: 1.5, window: 32, latencyRate: 500, latencyMessages: 150 },
  );
}

/** Drives the real app through an in-process adapter; `onReply` sees each reply with its eventId. */
export class CoreDriver {
  readonly adapter = new BenchAdapter();
  app!: App;
  readonly started = new Map<string, number>();
  onDone: (eventId: string, ms: number, at: number) => void = () => {};
  errors = 0;

  async start(
    dbUrl: string,
    onQuery?: (e: { query: string; params: string; durationMs: number }) => void,
    faults?: { beforeTransaction?(op: string): void },
    env: Record<string, string> = {},
  ): Promise<void> {
    this.adapter.onSend = (_to, text) => {
      const at = performance.now();
      const id = eventOfReply(text);
      const t0 = this.started.get(id);
      if (t0 === undefined) return;
      this.started.delete(id);
      this.onDone(id, at - t0, at);
    };
    this.app = (await startAppOn(dbUrl, [this.adapter], { ...BENCH_ENV, ...env }, { ...(onQuery ? { onQuery } : {}), ...(faults ? { faults } : {}) })).app;
  }

  send(j: number, chats: number): void {
    const w = workItem(j, chats);
    this.started.set(w.eventId, performance.now());
    this.adapter.ctx.inbound(this.adapter.envelope(w.chat, w.sender, w.group, messageText(w.eventId), w.eventId)).catch(() => this.errors++);
  }

  /** Closed loop: keeps `window` messages in flight; returns completion times and latencies. */
  async closedLoop(
    from: number,
    count: number,
    chats: number,
    window: number,
    label: string,
    maxSeconds = Infinity,
  ): Promise<{ doneAt: number[]; lat: number[] }> {
    const doneAt: number[] = [];
    const lat: number[] = [];
    let next = from;
    let end = from + count;
    const stopAt = performance.now() + maxSeconds * 1000;
    let finish!: () => void;
    const all = new Promise<void>((r) => (finish = r));
    this.onDone = (_id, ms, at) => {
      doneAt.push(at);
      lat.push(ms);
      if (next < end && at > stopAt) end = next;
      if (next < end) this.send(next++, chats);
      if (doneAt.length % 500 === 0) progress(`${label}: ${doneAt.length}/${count}`);
      if (doneAt.length === end - from) finish();
    };
    while (next < end && next - from < window) this.send(next++, chats);
    await withTimeout(all, 30 * 60_000, () => `${label}: ${doneAt.length}/${count} replies`);
    return { doneAt, lat };
  }

  /** Open loop at a fixed offered rate; latency from each inbound call to its sink send. */
  async fixedRate(from: number, count: number, chats: number, rate: number, label: string): Promise<{ lat: number[]; achieved: number }> {
    const lat: number[] = [];
    let finish!: () => void;
    const all = new Promise<void>((r) => (finish = r));
    let lastAt = 0;
    this.onDone = (_id, ms, at) => {
      lat.push(ms);
      lastAt = at;
      if (lat.length === count) finish();
    };
    const t0 = performance.now();
    let sent = 0;
    while (sent < count) {
      const due = Math.min(count, Math.floor(((performance.now() - t0) * rate) / 1000) + 1);
      while (sent < due) this.send(from + sent++, chats);
      progress(`${label}: ${sent}/${count} offered`);
      await sleep(1);
    }
    await withTimeout(all, 5 * 60_000, () => `${label}: ${lat.length}/${count} replies`);
    return { lat, achieved: (count * 1000) / (lastAt - t0) };
  }

  async stop(): Promise<void> {
    await this.app.stop();
  }
}

export async function withTimeout<T>(p: Promise<T>, ms: number, what: () => string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, rej) => (t = setTimeout(() => rej(new Error(`timed out: ${what()}`)), ms)))]);
  } finally {
    clearTimeout(t);
  }
}

/**
 * Statements per message, counted on a separate app of its own: the statement hook (onQuery)
 * costs time per statement, so the measured phases run without it. Same workload and window.
 */
async function countStatements(provider: "sqlite" | "postgres", p: CoreParams, steady = false): Promise<{ perMsg: number; byOp: Record<string, number> }> {
  let statements = 0;
  const d = new CoreDriver();
  await d.start(await freshUrl(provider), () => void statements++);
  try {
    const chats = steady ? Math.min(p.chats, 100) : p.chats;
    const from = steady ? chats : 0;
    if (steady) await d.closedLoop(0, chats, chats, p.window, `core_${provider} statements (first messages)`);
    await sleep(steady ? 300 : 0);
    const before = new Map(d.app.db.statementsByOp);
    const statements0 = statements;
    const n = Math.min(p.messages, 1000);
    const { doneAt } = await d.closedLoop(from, n, chats, p.window, `core_${provider} statements`);
    // The replies' "sent" marks land just after the sink answers: let them in before counting.
    await sleep(300);
    const byOp = Object.fromEntries(
      [...d.app.db.statementsByOp]
        .map(([op, k]) => [op, k - (before.get(op) ?? 0)] as const)
        .filter(([op, k]) => op !== "init" && k > 0)
        .sort((a, b) => b[1] - a[1])
        .map(([op, k]) => [op, r3(k / doneAt.length)]),
    );
    return { perMsg: (statements - statements0) / doneAt.length, byOp };
  } finally {
    await d.stop();
  }
}

export async function runCore(provider: "sqlite" | "postgres", quick: boolean): Promise<CoreResult> {
  const p = coreParams(quick);
  const statementsPerMsg = await countStatements(provider, p);
  const steadyStatements = await countStatements(provider, p, true);
  const d = new CoreDriver();
  await d.start(await freshUrl(provider));
  const label = `core_${provider}`;
  try {
    // Group commits are SQLite's; on PostgreSQL every transaction commits alone.
    // Group commits of both back ends (on PostgreSQL they group transactions only; its single writes autocommit).
    const groupCommits = () => (d.app.db instanceof SqliteDatabase || d.app.db instanceof PostgresDatabase ? d.app.db.groupStats.commits : 0);
    const commits0 = groupCommits();
    const statements0 = d.app.db.statements;
    const cpu0 = process.cpuUsage();
    const { doneAt, lat } = await d.closedLoop(0, p.messages, p.chats, p.window, `${label} throughput`, p.maxSeconds);
    const cpu = process.cpuUsage(cpu0);
    const commits = groupCommits() - commits0;
    // Every statement the store ran under load (transaction control and savepoints included), per message answered.
    const statements = d.app.db.statements - statements0;
    const windows = 10;
    const rates = windowRates(doneAt, windows);
    // Settle background work (delivery bookkeeping) before the latency phase.
    await sleep(500);
    const eld = monitorEventLoopDelay({ resolution: 1 });
    const gc: number[] = [];
    const obs = new PerformanceObserver((list) => void gc.push(...list.getEntries().map((e) => e.duration)));
    obs.observe({ entryTypes: ["gc"] });
    const overheadCommits0 = groupCommits();
    eld.enable();
    const fr = await d.fixedRate(doneAt.length, p.latencyMessages, p.chats, p.latencyRate, `${label} latency@${p.latencyRate}/s`);
    eld.disable();
    obs.disconnect();
    const overheadCommits = groupCommits() - overheadCommits0;
    const ns = (x: number) => r3(x / 1e6);
    return {
      params: {
        ...p,
        provider,
        windows,
        messages_done: doneAt.length,
        time_capped: doneAt.length < p.messages,
        messages_per_commit: commits ? r1(doneAt.length / commits) : null,
        // Message j goes to chat j % chats, so the first `chats` messages each open a chat.
        first_message_share: doneAt.length ? r3(Math.min(doneAt.length, p.chats) / doneAt.length) : null,
        statements_per_message: doneAt.length ? r1(statements / doneAt.length) : null,
      },
      msgs_per_s: r1(median(rates)),
      window_rates_median: r1(median(rates)),
      window_rates: rates.map(r1),
      throughput_latency: latency(lat),
      overhead_at_rate: { ...latency(fr.lat), offered_per_s: p.latencyRate, achieved_per_s: r1(fr.achieved) },
      statements_per_msg: r1(statementsPerMsg.perMsg),
      statements_by_op: statementsPerMsg.byOp,
      statements_per_msg_steady: r1(steadyStatements.perMsg),
      statements_by_op_steady: steadyStatements.byOp,
      cpu_ms_per_msg: r3((cpu.user + cpu.system) / 1000 / doneAt.length),
      overhead_causes: {
        event_loop_delay_p50_ms: ns(eld.percentile(50)),
        event_loop_delay_p99_ms: ns(eld.percentile(99)),
        event_loop_delay_max_ms: ns(eld.max),
        gc_pauses: gc.length,
        gc_total_ms: r1(gc.reduce((a, b) => a + b, 0)),
        gc_max_ms: r1(Math.max(0, ...gc)),
        messages_per_commit: overheadCommits ? r1(p.latencyMessages / overheadCommits) : null,
      },
      errors: d.errors,
    };
  } finally {
    await d.stop();
  }
}
