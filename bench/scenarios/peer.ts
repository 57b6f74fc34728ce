import Sqlite from "better-sqlite3";
import { Bot, session, type Context, type SessionFlavor, type StorageAdapter } from "grammy";
import { freshSqliteUrl } from "../lib/db.js";
import type { PlatformDriver } from "../lib/platforms.js";
import { r1 } from "../lib/stats.js";
import { stream, type StreamResult } from "./e2e.js";
import { sqliteFile } from "../../src/store/db.js";

interface SessionData {
  transcript: { role: "user" | "assistant"; text: string }[];
}

/** The session storage a bot author would write: one JSON value per session key in SQLite. */
class SqliteStorage<T> implements StorageAdapter<T> {
  readonly #get: Sqlite.Statement<[string], { value: string }>;
  readonly #put: Sqlite.Statement<[string, string]>;
  readonly #del: Sqlite.Statement<[string]>;
  constructor(readonly db: Sqlite.Database) {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.exec("CREATE TABLE IF NOT EXISTS sessions (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    this.#get = db.prepare("SELECT value FROM sessions WHERE key = ?");
    this.#put = db.prepare("INSERT INTO sessions (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value");
    this.#del = db.prepare("DELETE FROM sessions WHERE key = ?");
  }
  read(key: string): T | undefined {
    const row = this.#get.get(key);
    return row ? (JSON.parse(row.value) as T) : undefined;
  }
  write(key: string, value: T): void {
    this.#put.run(key, JSON.stringify(value));
  }
  delete(key: string): void {
    this.#del.run(key);
  }
}

export interface PeerResult {
  params: { quick: boolean; chats: number; messages: number; bot: string };
  msgs_per_s: number;
  p50_ms: number;
  p99_ms: number;
  ratio: number;
  ratio_unthrottled: number;
  switchboard_msgs_per_s: number;
  switchboard_unthrottled_msgs_per_s: number;
  peer: StreamResult;
}

/** A plain grammY bot with session + SQLite storage, long polling the same fake, fed the same stream. */
export async function runPeer(d: PlatformDriver, chats: number): Promise<StreamResult> {
  const env = d.env();
  const db = new Sqlite(sqliteFile(freshSqliteUrl()));
  const bot = new Bot<Context & SessionFlavor<SessionData>>(env.TELEGRAM_BOT_TOKEN!, { client: { apiRoot: env.TELEGRAM_API_ROOT! } });
  bot.use(session({ initial: (): SessionData => ({ transcript: [] }), storage: new SqliteStorage<SessionData>(db) }));
  bot.on("message:text", async (ctx) => {
    const reply = `echo: ${ctx.message.text}`;
    ctx.session.transcript.push({ role: "user", text: ctx.message.text }, { role: "assistant", text: reply });
    await ctx.reply(reply);
  });
  bot.catch(() => {});
  let running!: Promise<void>;
  await new Promise<void>((resolve) => {
    running = bot.start({ timeout: 1, drop_pending_updates: true, onStart: () => resolve() });
  });
  try {
    return await stream(d, chats, "p", "peer_grammy_session", 10 * 60_000);
  } finally {
    await bot.stop();
    await running.catch(() => {});
    db.close();
  }
}

export function peerResult(quick: boolean, chats: number, peer: StreamResult, sb: number, sbFree: number): PeerResult {
  return {
    params: {
      quick,
      chats,
      messages: chats,
      bot: "grammY Bot + session() + SQLite StorageAdapter (better-sqlite3), bot.start() long polling, sequential update handling",
    },
    msgs_per_s: peer.msgs_per_s,
    p50_ms: peer.latency.p50_ms,
    p99_ms: peer.latency.p99_ms,
    ratio: Math.round((sb / peer.msgs_per_s) * 1000) / 1000,
    ratio_unthrottled: Math.round((sbFree / peer.msgs_per_s) * 1000) / 1000,
    switchboard_msgs_per_s: sb,
    switchboard_unthrottled_msgs_per_s: sbFree,
    peer,
  };
}
void r1;
