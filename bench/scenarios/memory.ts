import Sqlite from "better-sqlite3";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { forkGateway, heapOf, heapSpacesOf, rssOf, snapshotOf, stopChild } from "../lib/child.js";
import { analyseHeapSnapshot, type HeapReport } from "../lib/heap-snapshot.js";
import { freshSqliteUrl } from "../lib/db.js";
import type { PlatformDriver } from "../lib/platforms.js";
import { pick } from "../lib/mode.js";
import { attributeRss, type RssAttribution } from "../lib/rss-attribution.js";
import { progress } from "../lib/progress.js";
import { agentSettings } from "../../src/config/agent.js";

export const liveChatCount = (quick: boolean) => pick(quick, 10_000, 300, 150);
import { median, r1, sleep } from "../lib/stats.js";

export interface MemoryResult {
  params: { quick: boolean; live_chats: number; soak_seconds: number; soak_rate_per_s: number; soak_label: string; limits: string };
  rss_idle_mb: number;
  /** Where RSS is (smaps and V8's heap spaces): when ready, at the live chats, after the soak. */
  rss_attribution: { idle: RssAttribution; live_chats: RssAttribution; after_soak: RssAttribution };
  rss_live_chats_mb: number;
  /** V8 heap in use at the live chats, after a full GC (what the chats keep alive). */
  heap_live_chats_mb: number;
  heap_idle_mb: number;
  heap_samples_mb: number[];
  /** Slope of the heap in use (sampled without forcing GC) over the soak after its warm-up. */
  soak_heap_slope_bytes_per_min: number;
  rss_samples_mb: number[];
  soak_slope_bytes_per_min: number;
  /** Seconds between the soak's full collections (heap and RSS read right after each). */
  soak_collected_every_s: number;
  /** RSS two seconds after each full collection (once V8 has given back the pages it emptied): what stays. */
  rss_collected_samples_mb: number[];
  /** Slope of RSS right after a full collection, after the warm-up: growth that stays, whatever the phase of V8's own collections. */
  soak_collected_slope_bytes_per_min: number;
  /** The same for the heap in use after a full collection. */
  soak_collected_heap_slope_bytes_per_min: number;
  /** Messages each chat had before the soak (the live chats' one, then the fill's): enough to fill its window. */
  fill_messages_per_chat: number;
  fill_seconds: number;
  /** From the database before the soak: sessions, and those holding a whole window (>= 40 stored entries). */
  soak_windows: { sessions: number; full: number; window: number };
  soak_messages: number;
  soak_replies: number;
  /** What holds the heap after the soak (the live chats still open), from a heap snapshot's dominator tree. */
  heap_retainers: HeapReport;
  /** Soak messages whose HTTP delivery failed (socket errors), and the first such error. */
  soak_send_errors: number;
  soak_first_send_error?: string;
}

const MB = 1024 * 1024;

/** Least-squares slope of (t seconds, bytes) in bytes per minute. */
function slope(points: [number, number][]): number {
  const n = points.length;
  const mx = points.reduce((a, p) => a + p[0], 0) / n;
  const my = points.reduce((a, p) => a + p[1], 0) / n;
  const num = points.reduce((a, p) => a + (p[0] - mx) * (p[1] - my), 0);
  const den = points.reduce((a, p) => a + (p[0] - mx) ** 2, 0);
  return den ? (num / den) * 60 : 0;
}

/** heapUsed without a forced GC (a GC every second would change what the soak measures). */
async function heapAt(child: import("node:child_process").ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    const on = (m: { memory?: NodeJS.MemoryUsage }) => {
      if (!m?.memory) return;
      child.off("message", on);
      resolve(m.memory.heapUsed);
    };
    child.on("message", on);
    child.send({ heap: "sample" });
  });
}

/** The gateway's default context window (CONTEXT_MAX_MESSAGES, 40 entries), which the soak leaves unset. */
const WINDOW: number = agentSettings.CONTEXT_MAX_MESSAGES.parse(undefined);
/** Messages that fill a chat's window: each is one user entry and one answer. */
const FILL_PER_CHAT = WINDOW / 2;

/** Says `text` in chat `k` of the bench's chats: chat k is chat k / 3 of platform k % 3, in every phase. */
function say(drivers: PlatformDriver[], k: number, text: string): ReturnType<PlatformDriver["say"]> {
  return drivers[k % drivers.length]!.say(Math.floor(k / drivers.length), text);
}

/** `rounds` messages to each of `chats` chats, round by round, at most 200 awaiting a reply. */
async function sayToEach(drivers: PlatformDriver[], chats: number, rounds: number, replies: () => number, label: string): Promise<void> {
  const base = replies();
  const total = chats * rounds;
  const end = Date.now() + 30 * 60_000;
  let sent = 0;
  // replies() copies a fake's log, so it is read again only when the last count says 200 are
  // awaiting (read before every send, the 190,000 of a full fill took quadratic time).
  let answered = 0;
  while (sent < total && Date.now() < end) {
    if (sent - answered >= 200) {
      answered = replies() - base;
      progress(`memory: ${label} ${answered}/${total}`);
      if (sent - answered >= 200) {
        await sleep(20);
        continue;
      }
    }
    await say(drivers, sent % chats, `m ${label}${sent}`);
    sent++;
  }
  while (replies() - base < total && Date.now() < end) await sleep(50);
  if (replies() - base < total) throw new Error(`memory: ${label}: ${replies() - base} of ${total} messages answered in 30 minutes`);
}

/** How many sessions the database holds, and how many hold a whole window of entries. */
function windowFill(file: string): { sessions: number; full: number; window: number } {
  const db = new Sqlite(file, { readonly: true });
  try {
    const row = db
      .prepare("SELECT COUNT(*) AS sessions, COALESCE(SUM(n >= ?), 0) AS full FROM (SELECT COUNT(*) AS n FROM Message GROUP BY sessionId)")
      .get(WINDOW) as { sessions: number; full: number };
    return { ...row, window: WINDOW };
  } finally {
    db.close();
  }
}

/** The compiled gateway (as `npm start` runs it) in its own process, all three adapters on their fakes (which run here): RSS at N live chats, then a soak. */
export async function runMemory(quick: boolean, drivers: PlatformDriver[], soakMinutes?: number): Promise<MemoryResult> {
  const liveChats = liveChatCount(quick);
  const soakSeconds = soakMinutes ? Math.round(soakMinutes * 60) : pick(quick, 300, 5, 3);
  // The slope leaves out a warm-up: the first minute of a full soak, the first fifth of a short one.
  const warmupSeconds = soakSeconds >= 300 ? 60 : soakSeconds / 5;
  const rate = 200;
  const env: Record<string, string> = {
    DATABASE_URL: freshSqliteUrl(),
    HTTP_PORT: "0",
    HTTP_HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    DM_POLICY: "open",
    GROUP_REQUIRE_MENTION: "false",
    BENCH_LIFT_LIMITS: "1",
  };
  for (const d of drivers) Object.assign(env, d.env());
  const { child, url } = await forkGateway(env, { compiled: true });
  const pid = child.pid!;
  const replies = () => drivers.reduce((a, d) => a + d.replies().length, 0);
  try {
    for (const d of drivers) await d.setEventsUrl(url);
    await sleep(quick ? 1000 : 2000);
    const idle = rssOf(pid);
    // Before any forced GC: RSS as it stands.
    const attrIdle = attributeRss(pid, await heapSpacesOf(child));
    const heapIdle = (await heapOf(child)).heapUsed;
    // One message in each of liveChats chats, spread over the platforms, at most 200 awaiting a reply.
    await sayToEach(drivers, liveChats, 1, replies, "live");
    await sleep(quick ? 1000 : 2000);
    const live = [rssOf(pid)];
    for (let i = 0; i < 4; i++) {
      await sleep(250);
      live.push(rssOf(pid));
    }
    const attrLive = attributeRss(pid, await heapSpacesOf(child));
    const heapLive = (await heapOf(child)).heapUsed;
    // Then the chats' windows are filled before the soak: a window grows until it holds the
    // context's last CONTEXT_MAX_MESSAGES (40) entries, a user's message and its answer each, and a
    // soak over windows still filling measures that filling (the 30-minute soak of 2026-12-07 gave
    // each chat about 37 messages; the Runner's share of the heap went 9.2 -> 14.9 MB, 0.51 MB/min).
    const fillStarted = performance.now();
    await sayToEach(drivers, liveChats, FILL_PER_CHAT - 1, replies, "fill");
    const fillSeconds = (performance.now() - fillStarted) / 1000;
    const windows = windowFill(new URL(env.DATABASE_URL!).pathname);
    progress(`memory: windows filled in ${Math.round(fillSeconds)} s (${windows.full}/${windows.sessions} sessions hold >= ${WINDOW} entries)`, true);
    const heapPoints: [number, number][] = [];
    // Every `collectEvery` s a full collection, with RSS and the heap read right after it. Without
    // them the slope was where V8's own collection cycle fell in the window: the old generation
    // grows by half (--heap-growing-percent=50) in about four minutes at 200 msgs/s, so a 4-minute
    // window held about one rising edge, and three runs of the same code gave 0.31, 0.83 and 1.37 MB/min.
    const collectEvery = Math.max(1, Math.round(soakSeconds / 10));
    const collected: [number, number][] = [];
    const collectedHeap: [number, number][] = [];
    let lastCollect = 0;
    let collectedAt: number | undefined;
    // Soak: `rate` msgs/s over the same chats for soakSeconds; RSS sampled every second.
    const points: [number, number][] = [];
    const t0 = performance.now();
    const soakBase = replies();
    let n = 0;
    let lastSample = 0;
    let sendErrors = 0;
    let firstSendError: string | undefined;
    // At most one second's worth in flight: a gateway that falls behind is seen as
    // soak_replies < soak_messages, not as thousands of open connections.
    const inflight = new Set<Promise<unknown>>();
    while (performance.now() - t0 < soakSeconds * 1000) {
      const due = Math.floor(((performance.now() - t0) * rate) / 1000);
      while (n < due && inflight.size < rate) {
        const r = say(drivers, n % liveChats, `m soak${n}`);
        // A send the gateway's socket refused is counted, not fatal: a busy loopback can reset a
        // reused keep-alive connection. The gateway having died is fatal.
        if (r) {
          const p: Promise<unknown> = Promise.resolve(r)
            .catch((e: unknown) => {
              sendErrors++;
              firstSendError ??= String((e as { cause?: unknown })?.cause ?? e);
            })
            .finally(() => inflight.delete(p));
          inflight.add(p);
        }
        n++;
      }
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`the gateway exited during the soak (${child.exitCode ?? child.signalCode}); first send error: ${firstSendError}`);
      const el = performance.now() - t0;
      if (el - lastSample >= 1000) {
        lastSample = el;
        points.push([el / 1000, rssOf(pid)]);
        const m = await heapAt(child);
        heapPoints.push([el / 1000, m]);
        // RSS is read two seconds after the collection, not at once: a compacting collection maps the
        // pages it moves objects to before V8's unmapper gives the emptied ones back (read at once,
        // RSS stood 40-50 MB above the every-second samples around it).
        if (collectedAt !== undefined && el - collectedAt >= 2000) {
          collected.push([el / 1000, rssOf(pid)]);
          collectedAt = undefined;
        }
        if (el - lastCollect >= collectEvery * 1000) {
          lastCollect = el;
          collectedHeap.push([el / 1000, (await heapOf(child)).heapUsed]);
          collectedAt = el;
        }
        progress(`memory: soak ${Math.round(el / 1000)}/${soakSeconds} s, rss ${r1(points.at(-1)![1] / MB)} MB`);
      }
      await sleep(5);
    }
    await Promise.all(inflight);
    if (collectedAt !== undefined) {
      await sleep(Math.max(0, collectedAt + 2000 - (performance.now() - t0)));
      collected.push([(performance.now() - t0) / 1000, rssOf(pid)]);
    }
    await sleep(1000);
    const attrSoak = attributeRss(pid, await heapSpacesOf(child));
    const snapshotFile = path.join(os.tmpdir(), `switchboard-bench-${process.pid}.heapsnapshot`);
    progress("memory: heap snapshot");
    await snapshotOf(child, snapshotFile);
    let retainers: HeapReport;
    try {
      const explain = process.env.BENCH_HEAP_EXPLAIN?.split(",").filter(Boolean) ?? [];
      retainers = analyseHeapSnapshot(snapshotFile, 10, explain);
    } finally {
      // BENCH_HEAP_SNAPSHOT_KEEP=1 keeps it for Chrome DevTools (Memory tab, Load).
      if (process.env.BENCH_HEAP_SNAPSHOT_KEEP === "1") progress(`memory: heap snapshot kept at ${snapshotFile}`);
      else fs.rmSync(snapshotFile, { force: true });
    }
    return {
      params: {
        quick,
        live_chats: liveChats,
        soak_seconds: soakSeconds,
        soak_rate_per_s: rate,
        soak_label:
          soakSeconds < 300
            ? `short soak (${soakSeconds} s): slope is indicative only`
            : `${r1(soakSeconds / 60)} min soak, slope after a ${warmupSeconds} s warm-up`,
        limits:
          "adapters' rate limits lifted in the gateway process (fakes do not rate-limit), so declared platform pacing adds no backlog (soak_replies < soak_messages means the gateway itself fell behind)",
      },
      rss_idle_mb: r1(idle / MB),
      rss_attribution: { idle: attrIdle, live_chats: attrLive, after_soak: attrSoak },
      rss_live_chats_mb: r1(median(live) / MB),
      rss_samples_mb: points.filter((_, i) => i % Math.max(1, Math.floor(points.length / 20)) === 0).map((p) => r1(p[1] / MB)),
      soak_slope_bytes_per_min: Math.round(slope(points.filter((p) => p[0] >= warmupSeconds))),
      heap_idle_mb: r1(heapIdle / MB),
      heap_live_chats_mb: r1(heapLive / MB),
      heap_samples_mb: heapPoints.filter((_, i) => i % Math.max(1, Math.floor(heapPoints.length / 20)) === 0).map((p) => r1(p[1] / MB)),
      soak_heap_slope_bytes_per_min: Math.round(slope(heapPoints.filter((p) => p[0] >= warmupSeconds))),
      soak_collected_every_s: collectEvery,
      rss_collected_samples_mb: collected.map((p) => r1(p[1] / MB)),
      soak_collected_slope_bytes_per_min: Math.round(slope(collected.filter((p) => p[0] >= warmupSeconds))),
      soak_collected_heap_slope_bytes_per_min: Math.round(slope(collectedHeap.filter((p) => p[0] >= warmupSeconds))),
      fill_messages_per_chat: FILL_PER_CHAT,
      fill_seconds: r1(fillSeconds),
      soak_windows: windows,
      soak_messages: n,
      soak_replies: replies() - soakBase,
      heap_retainers: retainers,
      soak_send_errors: sendErrors,
      ...(firstSendError ? { soak_first_send_error: firstSendError } : {}),
    };
  } finally {
    await stopChild(child);
  }
}
