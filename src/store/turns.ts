import { randomUUID } from "node:crypto";
import type { Database } from "./db.js";
import type { DeliveryStore } from "./deliveries.js";
import type { Sql } from "./sql.js";
import { prepare, type Dialect, type Param } from "./prepared.js";
import { messageRow, type NewMessage } from "./transcript.js";

export interface TurnCommit {
  sessionId: string;
  inboundIds: string[];
  messages: NewMessage[];
  turnIncrement: number;
  deliveries: Array<{ platform: string; botId: string; address: string; text: string; expiresAt: Date }>;
}

// The turn's statements, compiled once per provider and row count (prepared.ts).
const MARK_DONE = prepare((b, p: Param<{ done: string; processedAt: Date; sessionId: string; received: string }, { id: string }>, { rows }) =>
  b
    .updateTable("InboundEvent")
    .set({ status: p("done"), processedAt: p("processedAt"), sessionId: p("sessionId") })
    .where(
      "id",
      "in",
      Array.from({ length: rows }, (_, i) => p.row(i, "id")),
    )
    .where("status", "=", p("received")),
);

type NewDelivery = { id: string; inboundId: string | null; platform: string; botId: string; address: string; part: number; text: string; expiresAt: Date };
const INSERT_DELIVERIES = prepare((b, p: Param<{ sessionId: string; pending: string; zero: number; createdAt: Date }, NewDelivery>, { rows }) =>
  b.insertInto("OutboundDelivery").values(
    Array.from({ length: rows }, (_, i) => ({
      id: p.row(i, "id"),
      inboundId: p.row(i, "inboundId"),
      sessionId: p("sessionId"),
      platform: p.row(i, "platform"),
      botId: p.row(i, "botId"),
      address: p.row(i, "address"),
      part: p.row(i, "part"),
      text: p.row(i, "text"),
      status: p("pending"),
      attempts: p("zero"),
      createdAt: p("createdAt"),
      expiresAt: p.row(i, "expiresAt"),
    })),
  ),
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

/**
 * Commits everything one handled inbound event changes in ONE transaction:
 * transcript messages (refused for an archived session), the turn count,
 * the pending deliveries, and the inbound records marked done. A crash
 * before it replays the event; a crash after it only sends the deliveries.
 * Hot path: raw statements (see sql.ts), one round of each per turn.
 */
export class TurnStore {
  /** With `deliveries`, the pending records it writes are handed to the sender directly (no read back). */
  constructor(
    readonly db: Database,
    private readonly deliveries?: DeliveryStore,
  ) {}

  async commit(t: TurnCommit): Promise<{ transcript: TranscriptOutcome; deliveryIds: string[] }> {
    const deliveryIds = t.deliveries.map(() => randomUUID());
    const now = new Date();
    const transcript = await this.db.sqlTransaction("commit-turn", (s) => commitIn(this.db, s, t, deliveryIds, now));
    if (transcript === "duplicate") return { transcript, deliveryIds: [] };
    this.deliveries?.remember(
      t.deliveries.map((d, i) => ({
        id: deliveryIds[i]!,
        inboundId: t.inboundIds[0] ?? null,
        sessionId: t.sessionId,
        platform: d.platform,
        botId: d.botId,
        address: d.address,
        part: i,
        text: d.text,
        status: "pending",
        attempts: 0,
        platformMessageId: null,
        lastError: null,
        createdAt: now,
        expiresAt: d.expiresAt,
        sentAt: null,
      })),
    );
    return { transcript, deliveryIds };
  }
}

async function commitIn(db: Dialect, s: Sql, t: TurnCommit, deliveryIds: string[], now: Date): Promise<TranscriptOutcome> {
  // The inbound records first: when none of them was still unhandled, this commit already landed
  // (a retry after a lost acknowledgement) or another process handled them. Writing nothing more
  // keeps a retried commit from answering twice.
  if (t.inboundIds.length) {
    const marked = await s.run(
      MARK_DONE.bind(
        db,
        { done: "done", processedAt: now, sessionId: t.sessionId, received: "received" },
        t.inboundIds.map((id) => ({ id })),
      ),
    );
    if (marked === 0) return "duplicate";
  }
  if (t.deliveries.length) {
    await s.run(
      INSERT_DELIVERIES.bind(
        db,
        { sessionId: t.sessionId, pending: "pending", zero: 0, createdAt: now },
        t.deliveries.map((d, i) => ({
          id: deliveryIds[i]!,
          inboundId: t.inboundIds[0] ?? null,
          platform: d.platform,
          botId: d.botId,
          address: d.address,
          part: i,
          text: d.text,
          expiresAt: d.expiresAt,
        })),
      ),
    );
  }
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
