import Sqlite from "better-sqlite3";
import pg from "pg";
import { sqliteFile } from "../../src/store/db.js";
import { SQLITE_PRAGMAS } from "../../src/store/sqlite/sql.js";
import { openDatabase } from "../../src/store/index.js";
import { freshUrl } from "../lib/db.js";
import { pick } from "../lib/mode.js";
import { progress } from "../lib/progress.js";
import { median, r1, windowRates } from "../lib/stats.js";
import { captureTrace, freshen, TRACE_CHATS, TRACE_PER_CHAT, type TraceMessage } from "../lib/trace.js";

export interface FloorResult {
  params: {
    quick: boolean;
    provider: string;
    messages: number;
    maxSeconds: number;
    messages_done: number;
    trace_messages: number;
    /** The share of replayed messages that were a chat's first: the core run's own share. */
    first_message_share: number;
    statements_per_message: number;
    transactions_per_message: number;
    messages_per_commit: number;
    concurrency: number;
    method: string;
  };
  msgs_per_s: number;
  window_rates: number[];
  ratio: number;
  core_msgs_per_s: number;
  /** The trace's own 1:9 mix (one first message in ten), whatever the core ran: the floor as it was reported before 2026-12-07. */
  trace_mix: { first_message_share: number; statements_per_message: number; msgs_per_s: number; ratio: number };
}

const METHOD =
  "statements captured per message via createApp onQuery from a sequential core run (10 chats, 2 of them groups, 10 messages each: one first message, nine steady); replayed at the core throughput phase's own share of first messages (first_message_share: each chat's first message and on average (1 - share) / share of its steady ones), and at the trace's 1:9 (trace_mix); replayed with the raw driver against a fresh migrated database, each replay with fresh UUIDs and chat/sender/event ids (a chat's messages in order); SQLite on one connection with the gateway's pragmas and prepared statements cached, every statement of a message including its savepoints, with one BEGIN IMMEDIATE..COMMIT around as many messages as the core run put in one group commit (messages_per_commit); PostgreSQL on a 10-connection pool with 10 workers, transactions as captured";

const TX_CONTROL = /^(BEGIN|COMMIT|ROLLBACK)\b/i;

const sqliteParam = (v: unknown) => (typeof v === "boolean" ? (v ? 1 : 0) : v === undefined ? null : v);

/**
 * The messages each replay keeps, so the floor replays the mix the core ran: every chat's first
 * message, and after it `steadyPerFirst` of its steady ones on average (spread over the chats by
 * an accumulator, so 0.09 keeps one steady message in about eleven chats). The trace holds 9 per
 * chat; more is capped there.
 */
function mixPlan(steadyPerFirst: number): () => number {
  let acc = 0;
  return () => {
    const before = Math.floor(acc);
    acc += Math.min(TRACE_PER_CHAT - 1, steadyPerFirst);
    return Math.floor(acc) - before;
  };
}

function units(trace: TraceMessage[], k: number, steady: () => number): TraceMessage[][] {
  const keep: TraceMessage[] = [];
  for (let c = 0; c < TRACE_CHATS; c++) keep.push(...trace.filter((m) => m.chat === c).slice(0, 1 + steady()));
  // Fresh ids for the kept messages only: on a mix of mostly first messages, the rest would be work the replay never runs.
  const t = freshen(keep, k);
  return Array.from({ length: TRACE_CHATS }, (_, c) => t.filter((m) => m.chat === c));
}

interface Replay {
  doneAt: number[];
  statements: number;
  transactions: number;
  concurrency: number;
}

/** One replay of the trace at a mix (steady messages per first message) on a fresh migrated database. */
async function replay(
  provider: "sqlite" | "postgres",
  trace: TraceMessage[],
  steadyPerFirst: number,
  o: { messages: number; maxSeconds: number; messagesPerCommit: number },
): Promise<Replay> {
  const url = await freshUrl(provider);
  await (await openDatabase({ url })).close(); // migrated, empty
  const steady = mixPlan(steadyPerFirst);
  const doneAt: number[] = [];
  const out = { doneAt, statements: 0, transactions: 0, concurrency: 1 };
  const count = (m: TraceMessage) => {
    out.statements += m.stmts.length;
    out.transactions += m.stmts.filter((x) => /^COMMIT\b/i.test(x.sql)).length;
  };
  const stopAt = performance.now() + o.maxSeconds * 1000;
  const more = () => doneAt.length < o.messages && performance.now() < stopAt;
  if (provider === "sqlite") {
    const db = new Sqlite(sqliteFile(url));
    for (const p of SQLITE_PRAGMAS) db.pragma(p);
    const cache = new Map<string, Sqlite.Statement>();
    const group = Math.max(1, Math.round(o.messagesPerCommit));
    const begin = db.prepare("BEGIN IMMEDIATE");
    const commit = db.prepare("COMMIT");
    let inGroup = 0;
    const pending: number[] = [];
    try {
      for (let k = 0; more(); k++) {
        for (const unit of units(trace, k, steady)) {
          for (const m of unit) {
            if (inGroup === 0) begin.run();
            count(m);
            for (const s of m.stmts) {
              if (TX_CONTROL.test(s.sql)) continue;
              let st = cache.get(s.sql);
              if (!st) cache.set(s.sql, (st = db.prepare(s.sql)));
              const ps = s.params.map(sqliteParam);
              if (st.reader) st.all(...ps);
              else st.run(...ps);
            }
            pending.push(0);
            if (++inGroup === group) {
              commit.run();
              const at = performance.now();
              for (const _ of pending) doneAt.push(at);
              pending.length = 0;
              inGroup = 0;
            }
          }
        }
        progress(`floor_${provider}: ${doneAt.length}/${o.messages}`);
      }
      if (inGroup) {
        commit.run();
        for (const _ of pending) doneAt.push(performance.now());
      }
    } finally {
      db.close();
    }
    return out;
  }
  out.concurrency = 10;
  const pool = new pg.Pool({ connectionString: url, max: out.concurrency });
  const queue: TraceMessage[][] = [];
  let k = 0;
  const take = () => {
    if (!queue.length && more()) queue.push(...units(trace, k++, steady));
    return queue.shift();
  };
  try {
    await Promise.all(
      Array.from({ length: out.concurrency }, async () => {
        const client = await pool.connect();
        try {
          for (let unit = take(); unit; unit = take()) {
            for (const m of unit) {
              count(m);
              for (const s of m.stmts) await client.query(s.sql, s.params);
              doneAt.push(performance.now());
            }
            progress(`floor_${provider}: ${doneAt.length}/${o.messages}`);
          }
        } finally {
          client.release();
        }
      }),
    );
  } finally {
    await pool.end();
  }
  return out;
}

/**
 * The floor at the mix the core ran: `firstShare` is the share of the core's throughput messages
 * that were a chat's first (its time cap decides it: on PostgreSQL nearly every message in 20 s
 * opens a chat), so core/floor compares the same work. The trace's own 1:9 mix is replayed too
 * (`trace_mix`), the figure the floor reported before it followed the core's mix.
 */
export async function runFloor(
  provider: "sqlite" | "postgres",
  quick: boolean,
  coreMsgsPerS: number,
  messagesPerCommit = 1,
  firstShare = 1 / TRACE_PER_CHAT,
): Promise<FloorResult> {
  const messages = pick(quick, 30_000, 3000, 600);
  const maxSeconds = pick(quick, 8, 3, 1);
  const trace = await captureTrace(await freshUrl(provider));
  const share = Math.min(1, Math.max(1 / TRACE_PER_CHAT, firstShare));
  const o = { messages, maxSeconds, messagesPerCommit };
  const mixed = await replay(provider, trace, (1 - share) / share, o);
  const traced = await replay(provider, trace, TRACE_PER_CHAT - 1, o);
  const rate = (r: Replay) => median(windowRates(r.doneAt, 10));
  const floor = rate(mixed);
  const ratio = (f: number) => Math.round((coreMsgsPerS / f) * 1000) / 1000;
  const per = (x: number, r: Replay) => r1(x / Math.max(1, r.doneAt.length));
  return {
    params: {
      quick,
      provider,
      messages,
      maxSeconds,
      messages_done: mixed.doneAt.length,
      trace_messages: trace.length,
      first_message_share: Math.round(share * 1000) / 1000,
      statements_per_message: per(mixed.statements, mixed),
      transactions_per_message: per(mixed.transactions, mixed),
      messages_per_commit: provider === "sqlite" ? Math.max(1, Math.round(messagesPerCommit)) : 1,
      concurrency: mixed.concurrency,
      method: METHOD,
    },
    msgs_per_s: r1(floor),
    window_rates: windowRates(mixed.doneAt, 10).map(r1),
    ratio: ratio(floor),
    core_msgs_per_s: coreMsgsPerS,
    trace_mix: {
      first_message_share: 1 / TRACE_PER_CHAT,
      statements_per_message: per(traced.statements, traced),
      msgs_per_s: r1(rate(traced)),
      ratio: ratio(rate(traced)),
    },
  };
}
