import { DeliveryStore, pendingDeliveries, type DeliveryRecord, type NewReply } from "./deliveries.js";
import type { Database } from "./db.js";
import { toDate, type Sql } from "./sql.js";
import { prepare, type Dialect, type Param } from "./prepared.js";
import { messageRow, type NewMessage } from "./transcript.js";
import { codecs } from "./codecs.js";
import { turnStatement } from "./postgres/turn-statement.js";

export interface TurnCommit {
  sessionId: string;
  inboundIds: string[];
  messages: NewMessage[];
  turnIncrement: number;
  /** The replies to send, written as pending deliveries. */
  deliveries: NewReply[];
  /** A reply expires this long after its inbound event happened (InboundEvent.occurredAt), or after now without one. */
  ttlMs: number;
}

// The turn's statements, compiled once per provider and row count (prepared.ts). Marking the inbound
// records done returns when they happened: the replies' expiry is read in the same transaction.
const MARK_DONE = prepare((b, p: Param<{ done: string; processedAt: Date; sessionId: string; received: string }, { id: string }>, { rows }) =>
  b
    .updateTable("InboundEvent")
    .set({ status: p("done"), processedAt: p("processedAt"), sessionId: p("sessionId") })
    .where(
      "id",
      "in",
      Array.from({ length: rows }, (_, i) => p.row(i, "id")),
    )
    .where("status", "=", p("received"))
    .returning("occurredAt"),
);

// Touches the session and reads the transcript's last seq in one statement (the subquery runs before the
// turn's messages are inserted, in the same transaction): no row back means archived or missing.
const TOUCH_SESSION = prepare((b, p: Param<{ id: string; lastActive: Date; increment: number; archived: boolean }>) =>
  b
    .updateTable("Session")
    .set((eb) => ({ lastActive: p("lastActive"), turnCount: eb("turnCount", "+", p("increment")) }))
    .where("id", "=", p("id"))
    .where("archived", "=", p("archived"))
    .returning((eb) =>
      eb
        .selectFrom("Message")
        .select((m) => m.fn.max("seq").as("seq"))
        .where("sessionId", "=", p("id"))
        .as("lastSeq"),
    ),
);

const SESSION_EXISTS = prepare((b, p: Param<{ id: string }>) => b.selectFrom("Session").select("id").where("id", "=", p("id")));

type NewRow = { seq: number; role: string; content: string; meta: string | null; createdAt: Date; sourceId: string | null };
const INSERT_MESSAGES = prepare((b, p: Param<{ sessionId: string }, NewRow>, { rows }) =>
  b.insertInto("Message").values(
    Array.from({ length: rows }, (_, i) => ({
      sessionId: p("sessionId"),
      seq: p.row(i, "seq"),
      role: p.row(i, "role"),
      content: p.row(i, "content"),
      meta: p.row(i, "meta"),
      createdAt: p.row(i, "createdAt"),
      sourceId: p.row(i, "sourceId"),
    })),
  ),
);

export type TranscriptOutcome = "ok" | "archived" | "missing" | "skipped" | "duplicate";

/** What a commit wrote: the transcript's outcome and the delivery rows as written, in the order of the replies. */
export interface TurnCommitted {
  transcript: TranscriptOutcome;
  deliveries: DeliveryRecord[];
}

/**
 * Commits everything one handled inbound event changes in ONE transaction:
 * transcript messages (refused for an archived session), the turn count,
 * the pending deliveries, and the inbound records marked done. A crash
 * before it replays the event; a crash after it only sends the deliveries.
 * Hot path: raw statements (see sql.ts), one round of each per turn.
 */
export class TurnStore {
  /** The deliveries are written through `deliveries`, which hands them to the sender as written (no read back). */
  constructor(
    readonly db: Database,
    private readonly deliveries = new DeliveryStore(db),
  ) {}

  commit(t: TurnCommit): Promise<TurnCommitted> {
    return this.deliveries.transaction("commit-turn", (s, write, wrote) =>
      this.db.provider === "postgresql" ? commitInOne(s, t, wrote) : commitIn(this.db, s, t, write),
    );
  }
}

/**
 * PostgreSQL: the same writes as commitIn in one statement (postgres/turn-statement.ts), one round trip
 * instead of four; SQLite runs in process, where a statement costs no round trip, and keeps commitIn.
 */
async function commitInOne(s: Sql, t: TurnCommit, wrote: (rows: DeliveryRecord[]) => void): Promise<TurnCommitted> {
  const now = new Date();
  // Their expiry is the statement's (from the inbound events it marks), set from the row it returns; the
  // messages' seqs are the statement's too (after the session's last).
  const deliveries = pendingDeliveries({ sessionId: t.sessionId, inboundId: t.inboundIds[0] ?? null, createdAt: now, expiresAt: now }, t.deliveries);
  const [r] = await s.all(
    turnStatement({
      sessionId: t.sessionId,
      now,
      inboundIds: t.inboundIds,
      deliveries: deliveries.map((d) => ({ ...d, address: codecs.deliveryAddress.encode(d.address) })),
      ttlMs: t.ttlMs,
      ...(t.messages.length || t.turnIncrement ? { transcript: { increment: t.turnIncrement, messages: t.messages.map((m) => messageRow(m, 0, now)) } } : {}),
    }),
  );
  if (!r?.marked) return { transcript: "duplicate", deliveries: [] };
  for (const d of deliveries) d.expiresAt = toDate(r.expiresAt);
  wrote(deliveries);
  const transcript = !t.messages.length && !t.turnIncrement ? "skipped" : r.touched ? "ok" : r.sessionExists ? "archived" : "missing";
  return { transcript, deliveries };
}

async function commitIn(db: Dialect, s: Sql, t: TurnCommit, write: (rows: DeliveryRecord[]) => Promise<void>): Promise<TurnCommitted> {
  const now = new Date();
  // The inbound records first: when none of them was still unhandled, this commit already landed
  // (a retry after a lost acknowledgement) or another process handled them. Writing nothing more
  // keeps a retried commit from answering twice.
  let origin = now.getTime();
  if (t.inboundIds.length) {
    const marked = await s.all(
      MARK_DONE.bind(
        db,
        { done: "done", processedAt: now, sessionId: t.sessionId, received: "received" },
        t.inboundIds.map((id) => ({ id })),
      ),
    );
    if (marked.length === 0) return { transcript: "duplicate", deliveries: [] };
    // A reply never expires later than its (earliest) inbound event's TTL.
    origin = Math.min(...marked.map((r) => toDate(r.occurredAt).getTime()));
  }
  const deliveries = pendingDeliveries(
    { sessionId: t.sessionId, inboundId: t.inboundIds[0] ?? null, createdAt: now, expiresAt: new Date(origin + t.ttlMs) },
    t.deliveries,
  );
  await write(deliveries);
  return { transcript: await transcriptIn(db, s, t, now), deliveries };
}

async function transcriptIn(db: Dialect, s: Sql, t: TurnCommit, now: Date): Promise<TranscriptOutcome> {
  if (!t.messages.length && !t.turnIncrement) return "skipped";
  const [touched] = await s.all(TOUCH_SESSION.bind(db, { id: t.sessionId, lastActive: now, increment: t.turnIncrement, archived: false }));
  if (!touched) {
    const found = await s.all(SESSION_EXISTS.bind(db, { id: t.sessionId }));
    return found.length ? "archived" : "missing";
  }
  if (t.messages.length) {
    let seq = Number(touched.lastSeq ?? 0);
    await s.run(
      INSERT_MESSAGES.bind(
        db,
        { sessionId: t.sessionId },
        t.messages.map((m) => messageRow(m, ++seq, now)),
      ),
    );
  }
  return "ok";
}
