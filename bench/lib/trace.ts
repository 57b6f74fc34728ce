import { randomUUID } from "node:crypto";
import { CoreDriver } from "../scenarios/core.js";
import { sleep } from "./stats.js";
import { workItem } from "./workload.js";

/** One captured statement, as the store ran it (the raw hot path reports its BEGIN/SAVEPOINT/COMMIT too). */
export interface Stmt {
  sql: string;
  params: unknown[];
}
export interface TraceMessage {
  chat: number;
  stmts: Stmt[];
}

export const TRACE_CHATS = 10;
export const TRACE_PER_CHAT = 10;

/**
 * The statements the core pipeline issues, per message, captured with
 * createApp's onQuery from a sequential run of the core workload's mix
 * (10 chats, 2 of them groups with three senders, 10 messages each: one
 * new-chat message then steady state, the same 1:9 mix as 10,000 chats /
 * 100,000 messages). Each message runs alone, and the capture waits for its
 * trailing delivery updates, so every statement is attributed to one message.
 */
export async function captureTrace(dbUrl: string): Promise<TraceMessage[]> {
  let current: Stmt[] = [];
  const d = new CoreDriver();
  await d.start(dbUrl, (e) => current.push({ sql: e.query, params: e.params ? (JSON.parse(e.params) as unknown[]) : [] }));
  const out: TraceMessage[] = [];
  try {
    await sleep(50);
    const n = TRACE_CHATS * TRACE_PER_CHAT;
    for (let j = 0; j < n; j++) {
      current = [];
      let done!: () => void;
      const replied = new Promise<void>((r) => (done = r));
      d.onDone = () => done();
      d.send(j, TRACE_CHATS);
      await replied;
      await sleep(15);
      out.push({ chat: j % TRACE_CHATS, stmts: current });
    }
  } finally {
    await d.stop();
  }
  void workItem;
  return out;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const TOKEN = /bk([0-9a-y]+)z/g;

/**
 * Fresh ids for replay `k`: every UUID maps to a new UUID (consistently within
 * the replay, so foreign keys still match) and every workload token bk<..>z
 * (chat, sender, event ids, inside binding keys and JSON too) gets the suffix
 * _k. Everything else (texts, timestamps, counters) is replayed as captured.
 */
export function freshen(trace: TraceMessage[], k: number): TraceMessage[] {
  const map = new Map<string, string>();
  const fix = (v: unknown): unknown =>
    typeof v === "string" ? v.replace(UUID, (u) => map.get(u) ?? (map.set(u, randomUUID()), map.get(u)!)).replace(TOKEN, (_m, t: string) => `bk${t}_${k}z`) : v;
  return trace.map((m) => ({ chat: m.chat, stmts: m.stmts.map((s) => ({ sql: s.sql, params: s.params.map(fix) })) }));
}
