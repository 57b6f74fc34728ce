import Sqlite from "better-sqlite3";
import pg from "pg";
import { sqliteFile } from "../../src/store/db.js";
import { SQLITE_PRAGMAS } from "../../src/store/sqlite/sql.js";
import { openDatabase } from "../../src/store/index.js";
import { freshUrl } from "../lib/db.js";
import { pick } from "../lib/mode.js";
import { progress } from "../lib/progress.js";
import { median, r1, windowRates } from "../lib/stats.js";
import { captureTrace, freshen, TRACE_CHATS, type TraceMessage } from "../lib/trace.js";

export interface FloorResult {
  params: {
    quick: boolean;
    provider: string;
    messages: number;
    maxSeconds: number;
    messages_done: number;
    trace_messages: number;
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
}

const METHOD =
  "statements captured per message via createApp onQuery from a sequential core run of the same 1:9 new/steady, 20%-group mix; replayed with the raw driver against a fresh migrated database, each replay with fresh UUIDs and chat/sender/event ids (a chat's messages in order); SQLite on one connection with the gateway's pragmas and prepared statements cached, every statement of a message including its savepoints, with one BEGIN IMMEDIATE..COMMIT around as many messages as the core run put in one group commit (messages_per_commit); PostgreSQL on a 10-connection pool with 10 workers, transactions as captured";

const TX_CONTROL = /^(BEGIN|COMMIT|ROLLBACK)\b/i;

const sqliteParam = (v: unknown) => (typeof v === "boolean" ? (v ? 1 : 0) : v === undefined ? null : v);

function units(trace: TraceMessage[], k: number): TraceMessage[][] {
  const t = freshen(trace, k);
  return Array.from({ length: TRACE_CHATS }, (_, c) => t.filter((m) => m.chat === c));
}

export async function runFloor(provider: "sqlite" | "postgres", quick: boolean, coreMsgsPerS: number, messagesPerCommit = 1): Promise<FloorResult> {
  const messages = pick(quick, 30_000, 3000, 600);
  const maxSeconds = pick(quick, 8, 3, 1);
  const trace = await captureTrace(await freshUrl(provider));
  const url = await freshUrl(provider);
  await (await openDatabase({ url })).close(); // migrated, empty
  const replays = Math.ceil(messages / trace.length);
  const doneAt: number[] = [];
  const stopAt = performance.now() + maxSeconds * 1000;
  let concurrency = 1;
  if (provider === "sqlite") {
    const db = new Sqlite(sqliteFile(url));
    for (const p of SQLITE_PRAGMAS) db.pragma(p);
    const cache = new Map<string, Sqlite.Statement>();
    const group = Math.max(1, Math.round(messagesPerCommit));
    const begin = db.prepare("BEGIN IMMEDIATE");
    const commit = db.prepare("COMMIT");
    let inGroup = 0;
    const pending: number[] = [];
    try {
      for (let k = 0; k < replays && performance.now() < stopAt; k++) {
        for (const unit of units(trace, k)) {
          for (const m of unit) {
            if (inGroup === 0) begin.run();
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
        progress(`floor_${provider}: ${doneAt.length}/${messages}`);
      }
      if (inGroup) {
        commit.run();
        for (const _ of pending) doneAt.push(performance.now());
      }
    } finally {
      db.close();
    }
  } else {
    concurrency = 10;
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    const queue: TraceMessage[][] = [];
    let k = 0;
    const take = () => {
      if (!queue.length && k < replays && performance.now() < stopAt) queue.push(...units(trace, k++));
      return queue.shift();
    };
    try {
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          const client = await pool.connect();
          try {
            for (let unit = take(); unit; unit = take()) {
              for (const m of unit) {
                for (const s of m.stmts) await client.query(s.sql, s.params);
                doneAt.push(performance.now());
              }
              progress(`floor_${provider}: ${doneAt.length}/${messages}`);
            }
          } finally {
            client.release();
          }
        }),
      );
    } finally {
      await pool.end();
    }
  }
  const rates = windowRates(doneAt, 10);
  const floor = median(rates);
  const stmts = trace.reduce((a, m) => a + m.stmts.length, 0) / trace.length;
  const txs = trace.reduce((a, m) => a + m.stmts.filter((s) => /^COMMIT\b/i.test(s.sql)).length, 0) / trace.length;
  return {
    params: {
      quick,
      provider,
      messages,
      maxSeconds,
      messages_done: doneAt.length,
      trace_messages: trace.length,
      statements_per_message: r1(stmts),
      transactions_per_message: r1(txs),
      messages_per_commit: provider === "sqlite" ? Math.max(1, Math.round(messagesPerCommit)) : 1,
      concurrency,
      method: METHOD,
    },
    msgs_per_s: r1(floor),
    window_rates: rates.map(r1),
    ratio: Math.round((coreMsgsPerS / floor) * 1000) / 1000,
    core_msgs_per_s: coreMsgsPerS,
  };
}
