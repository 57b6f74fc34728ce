/**
 * Issue 31's peers, side by side: the plain grammY bot, the Chat SDK bot,
 * Switchboard (echo agent, then a fake OpenAI-compatible model) and, where it
 * installs and starts, OpenClaw, one after another, each in its own process
 * on the same fake Telegram API in webhook mode. This process holds only the
 * fake and the sender; every CPU and RSS figure is the system's own process.
 */
import os from "node:os";
import { freshSqliteUrl } from "../lib/db.js";
import { cpuMsOf, rssOf, stopChild, treeSum } from "../lib/child.js";
import { mode, pick } from "../lib/mode.js";
import { telegramDriver, type PlatformDriver } from "../lib/platforms.js";
import { progress } from "../lib/progress.js";
import { median, r1, r3, sleep, type LatencySummary } from "../lib/stats.js";
import { openClaw, taggedEchoModel, type Skipped } from "../peers/openclaw.js";
import { chatSdk, grammyPlain, switchboard, type PeerSystem, type RunningSystem } from "../peers/systems.js";
import { stream } from "./e2e.js";
import { echoingModel, pacedStream } from "./paced.js";
import { buildCompiled } from "./startup.js";

export interface SystemFigures {
  label: string;
  /** Spawn to the first reply recorded by the fake (second start: the first, not counted, migrates Switchboard's database and warms the file cache; one start with --smoke). */
  start_to_first_reply_ms: number;
  first_start_ms: number;
  /** After the first reply, settled (median of samples). */
  idle_rss_mb: number;
  /** Median of the unpaced rounds: every chat sends one message, all offered at once. */
  msgs_per_s: number;
  /** The system's own CPU (user + system, /proc) per message, median of the rounds. */
  cpu_ms_per_msg: number;
  rounds: Array<{ msgs_per_s: number; cpu_ms_per_msg: number; latency: LatencySummary }>;
  /** A steady 50 msgs/s, one chat after another (paced.ts's stream); null for a `reduced` system. */
  paced_50: (LatencySummary & { offered_msgs_per_s: number; cpu_ms_per_msg: number }) | null;
  /** After the first unpaced round (every one of `params.chats` chats has sent one message), settled. */
  rss_after_chats_mb: number;
  load_average_1min: number;
}

export type Failed = { failed: string };
/** `warmStart`: a first start, not counted, before the measured one (the smoke run, which only checks the document's shape, has one start). */
type Scale = { chats: number; rounds: number; pacedCount: number; quick: boolean; warmStart: boolean };
export type Entry = SystemFigures | { skipped: string } | Failed;

const FIGURES = {
  start_to_first_reply_ms: (f: SystemFigures) => f.start_to_first_reply_ms,
  idle_rss_mb: (f: SystemFigures) => f.idle_rss_mb,
  msgs_per_s: (f: SystemFigures) => f.msgs_per_s,
  cpu_ms_per_msg: (f: SystemFigures) => f.cpu_ms_per_msg,
  p50_50_ms: (f: SystemFigures) => f.paced_50?.p50_ms ?? Number.NaN,
  p99_50_ms: (f: SystemFigures) => f.paced_50?.p99_ms ?? Number.NaN,
  rss_after_chats_mb: (f: SystemFigures) => f.rss_after_chats_mb,
} as const;
type Figure = keyof typeof FIGURES;
type Ratios = Record<Figure, { vs_grammy: number | null; vs_chat_sdk: number | null; vs_openclaw: number | null }>;

export interface PeersResult {
  params: Record<string, unknown>;
  systems: Record<PeerSystem["key"], Entry>;
  /** Switchboard (echo agent) ÷ each peer, per figure (msgs/s: above 1 is faster; every other figure: below 1 is better); null where one side did not run. */
  ratios: Ratios;
  /** The same for Switchboard with the fake model. */
  ratios_model: Ratios;
}

const measured = (e: Entry | undefined): e is SystemFigures => !!e && "label" in e && "msgs_per_s" in e;
/** The system's RSS and CPU: its process and the ones it started (OpenClaw runs helper processes). */
const mb = (pid: number) => treeSum(pid, rssOf) / 2 ** 20;
const cpuOf = (pid: number) => treeSum(pid, cpuMsOf);

/** Median RSS of a few samples after a pause: what the process holds once the last burst has settled. */
async function settledRss(pid: number, quick: boolean): Promise<number> {
  // The smoke run only checks the document's shape: one sample, no pause.
  if (mode.smoke) return r1(mb(pid));
  await sleep(quick ? 300 : 1000);
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(mb(pid));
    await sleep(100);
  }
  return r1(median(samples));
}

/** Starts `sys`, points the fake's webhook at it and waits for its answer to one message: spawn to reply, ms. */
async function startToFirstReply(sys: PeerSystem, d: PlatformDriver, tag: string, chat: number): Promise<{ running: RunningSystem; ms: number }> {
  const t0 = performance.now();
  const running = await sys.start(d);
  try {
    await d.setEventsUrl(running.url);
    const text = `m ${tag}`;
    d.say(chat, text);
    await d.waitFor(() => d.replies().some((r) => r.text === `echo: ${text}`), 120_000);
    return { running, ms: performance.now() - t0 };
  } catch (err) {
    await stopChild(running.child);
    throw err;
  }
}

/**
 * Every figure of one system; the process is stopped whatever happens. A
 * `reduced` system runs one unpaced round over its few chats and neither the
 * paced run nor the RSS after all chats (those are NaN/null).
 */
export async function measureSystem(sys: PeerSystem, d: PlatformDriver, scale: Scale): Promise<SystemFigures> {
  let firstMs = Number.NaN;
  if (scale.warmStart) {
    const first = await startToFirstReply(sys, d, `${sys.key}-warm`, scale.chats - 1);
    firstMs = first.ms;
    await stopChild(first.running.child);
  }
  const { running, ms } = await startToFirstReply(sys, d, `${sys.key}-first`, scale.chats - 1);
  const pid = running.child.pid!;
  const chats = sys.reduced ? Math.min(sys.reduced.messages, scale.chats) : scale.chats;
  const roundCount = sys.reduced ? 1 : scale.rounds;
  // The first messages go to the last chat: a reduced system's round then starts in chats it has never seen (OpenClaw's
  // group prompt carries the group's earlier messages, and the fake model answers the bench's last tag in the prompt).
  try {
    const idle = await settledRss(pid, scale.quick);
    const rounds: SystemFigures["rounds"] = [];
    let afterChats = Number.NaN;
    for (let round = 0; round < roundCount; round++) {
      const cpu0 = cpuOf(pid);
      const r = await stream(d, chats, `${sys.key}-u${round}-`, `peers ${sys.key} unpaced ${round + 1}/${roundCount}`, (sys.reduced ? 3 : 10) * 60_000);
      rounds.push({ msgs_per_s: r.msgs_per_s, cpu_ms_per_msg: r3((cpuOf(pid) - cpu0) / chats), latency: r.latency });
      if (round === 0 && !sys.reduced) afterChats = await settledRss(pid, scale.quick);
    }
    let paced: SystemFigures["paced_50"] = null;
    if (!sys.reduced) {
      const cpu0 = cpuOf(pid);
      const p = await pacedStream(d, 50, scale.pacedCount, `${sys.key}-p-`, `peers ${sys.key} 50/s`);
      paced = { ...p.latency, offered_msgs_per_s: p.offered_msgs_per_s, cpu_ms_per_msg: r3((cpuOf(pid) - cpu0) / scale.pacedCount) };
    }
    return {
      label: sys.label,
      start_to_first_reply_ms: r1(ms),
      first_start_ms: r1(Number.isNaN(firstMs) ? ms : firstMs),
      idle_rss_mb: idle,
      msgs_per_s: r1(median(rounds.map((r) => r.msgs_per_s))),
      cpu_ms_per_msg: r3(median(rounds.map((r) => r.cpu_ms_per_msg))),
      rounds,
      paced_50: paced,
      rss_after_chats_mb: afterChats,
      load_average_1min: r1(os.loadavg()[0]!),
    };
  } finally {
    await stopChild(running.child);
  }
}

/** Switchboard's figures ÷ each peer's, to 3 significant digits (OpenClaw's are hundreds of times apart); null where either side has no figure (skipped, failed, or not measured). */
export function peerRatios(sb: Entry | undefined, systems: Partial<Record<PeerSystem["key"], Entry>>): Ratios {
  const one = (peer: Entry | undefined, f: (x: SystemFigures) => number) =>
    measured(sb) && measured(peer) && Number.isFinite(f(sb)) && Number.isFinite(f(peer)) && f(peer) > 0 ? Number((f(sb) / f(peer)).toPrecision(3)) : null;
  return Object.fromEntries(
    Object.entries(FIGURES).map(([k, f]) => [
      k,
      { vs_grammy: one(systems.grammy, f), vs_chat_sdk: one(systems.chat_sdk, f), vs_openclaw: one(systems.openclaw, f) },
    ]),
  ) as Ratios;
}

/**
 * Each system in turn: the plain grammY bot, the Chat SDK bot, Switchboard
 * with the echo agent, with a fake model, then OpenClaw (never with --smoke;
 * BENCH_PEERS_OPENCLAW=0 skips it). A system that fails is recorded as
 * `{ failed }` (OpenClaw: `{ skipped }`) and the others still run.
 */
export async function runPeers(quick: boolean, smoke: boolean): Promise<PeersResult> {
  const scale: Scale = { chats: pick(quick, 2000, 300, 20), rounds: pick(quick, 3, 2, 1), pacedCount: pick(quick, 1000, 300, 20), quick, warmStart: !smoke };
  buildCompiled();
  const d = telegramDriver(scale.chats, { webhook: true });
  await d.start();
  const model = await echoingModel();
  const clawModel = await taggedEchoModel();
  const systems: Partial<Record<PeerSystem["key"], Entry>> = {};
  try {
    const list: Array<PeerSystem | Skipped> = [
      grammyPlain,
      chatSdk,
      switchboard("switchboard_echo", freshSqliteUrl()),
      switchboard("switchboard_model", freshSqliteUrl(), { OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: "bench", OPENAI_MODEL: "fake-model" }),
      openClaw(smoke, () => clawModel.baseUrl),
    ];
    // BENCH_PEERS_SYSTEMS=grammy,switchboard_echo runs only those (bench:compare --only=peers, a quicker look at one system).
    const only = process.env.BENCH_PEERS_SYSTEMS?.split(",").filter(Boolean);
    for (const sys of list) {
      if (only && !only.includes(sys.key)) {
        systems[sys.key] = { skipped: "not in BENCH_PEERS_SYSTEMS" };
        continue;
      }
      if ("skipped" in sys) {
        process.stderr.write(`peers: ${sys.key} skipped: ${sys.skipped}\n`);
        systems[sys.key] = { skipped: sys.skipped };
        continue;
      }
      progress(`peers: ${sys.label}…`, true);
      try {
        systems[sys.key] = await measureSystem(sys, d, scale);
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err);
        // OpenClaw is a peer that may not run on this machine (its start is bounded): that is a skip, not a broken bench.
        const outcome = sys.key === "openclaw" ? "skipped" : "failed";
        process.stderr.write(`peers: ${sys.key} ${outcome}: ${why}\n`);
        systems[sys.key] = outcome === "skipped" ? { skipped: why } : { failed: why };
      }
      model.requests.length = 0;
    }
  } finally {
    await model.close();
    await clawModel.close();
    await d.close();
  }
  return {
    params: {
      quick,
      smoke,
      platform: "telegram",
      transport: "webhook (the fake POSTs each update, up to 40 in parallel)",
      chats: scale.chats,
      unpaced_rounds: scale.rounds,
      unpaced: "every chat sends one message, all offered at once; msgs/s and CPU ms/msg are the rounds' medians",
      paced_messages: scale.pacedCount,
      processes:
        "each system in its own process (peers and Switchboard's compiled gateway on this Node; OpenClaw on Node 24); the bench process holds only the fake and the sender",
      limits: "none: the peers have no limiter, Switchboard runs with its declared limits lifted (BENCH_LIFT_LIMITS=1), the fake never rate-limits",
      storage: "grammY: none; Chat SDK: @chat-adapter/state-memory; Switchboard: SQLite",
      group_share: 0.2,
      load_average_1min_at_end: r1(os.loadavg()[0]!),
    },
    systems: systems as Record<PeerSystem["key"], Entry>,
    ratios: peerRatios(systems.switchboard_echo, systems),
    ratios_model: peerRatios(systems.switchboard_model, systems),
  };
}
