import { randomUUID } from "node:crypto";
import { sql, type Selectable } from "kysely";
import type { Database } from "./db.js";
import { pruneSettled } from "./retention.js";
import type { DB } from "./sql.js";
import { prepare, type Param } from "./prepared.js";

export type InboundStatus = "received" | "done" | "expired" | "ignored";

/** A recorded event (seq: the recorded order, a database sequence; replay and the shared-mode drain go by it). */
export type InboundRecord = Omit<Selectable<DB["InboundEvent"]>, "arrivalSessionId">;

const COLUMNS = [
  "id",
  "platform",
  "botId",
  "eventId",
  "status",
  "envelope",
  "occurredAt",
  "receivedAt",
  "processedAt",
  "sessionId",
  "note",
  "conversation",
  "seq",
  "traceparent",
] as const;

/**
 * The next recorded-order value, drawn inside the INSERT. PostgreSQL: a
 * sequence, so processes on several hosts share one order whatever their
 * clocks say. SQLite: one past the largest, which is safe because every
 * write holds the database's one write lock (BEGIN IMMEDIATE).
 */
const NEXT_SEQ = {
  postgresql: sql<number>`nextval('"InboundEvent_seq_source"')`,
  sqlite: sql<number>`(SELECT COALESCE(MAX("seq"), 0) + 1 FROM "InboundEvent")`,
} as const;

type NewInbound = Omit<Selectable<DB["InboundEvent"]>, "arrivalSessionId" | "sessionId" | "seq">;

// Hot path: compiled once (prepared.ts). ON CONFLICT on the unique platform + bot + event id: a redelivery changes nothing.
const RECORD = prepare((b, p: Param<NewInbound>, { provider }) =>
  b
    .insertInto("InboundEvent")
    .values({
      id: p("id"),
      platform: p("platform"),
      botId: p("botId"),
      eventId: p("eventId"),
      status: p("status"),
      envelope: p("envelope"),
      occurredAt: p("occurredAt"),
      receivedAt: p("receivedAt"),
      processedAt: p("processedAt"),
      note: p("note"),
      conversation: p("conversation"),
      traceparent: p("traceparent"),
      seq: NEXT_SEQ[provider],
    })
    .onConflict((oc) => oc.doNothing()),
);

const MARK = prepare((b, p: Param<{ id: string; status: string; processedAt: Date; note: string | null; received: string }>) =>
  b
    .updateTable("InboundEvent")
    .set((eb) => ({ status: p("status"), processedAt: p("processedAt"), note: eb.fn.coalesce(eb.val(p("note")), eb.ref("note")) }))
    .where("id", "=", p("id"))
    .where("status", "=", p("received")),
);

/**
 * Inbound events, recorded before they are acknowledged or processed. The
 * unique key platform + bot + event id turns every platform retry, Socket
 * Mode redelivery or restart replay into a dropped duplicate.
 */
export class InboundStore {
  /** `now` is the recording time written to receivedAt (tests skew it: order never depends on it). */
  constructor(
    readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * Records an event. Returns its id, or "duplicate" when the key was seen
   * before. An expired event is recorded as expired (so its redeliveries are
   * duplicates too).
   */
  async record(e: {
    platform: string;
    botId: string;
    eventId: string;
    envelope: string;
    occurredAt: Date;
    conversation?: string;
    status?: InboundStatus;
    note?: string;
    /** The message's trace (src/telemetry), for the process that handles it. */
    traceparent?: string;
  }): Promise<{ id: string } | "duplicate"> {
    const id = randomUUID();
    const now = this.now();
    const status = e.status ?? "received";
    const inserted = await this.#insert(
      id,
      RECORD.bind(this.db, {
        id,
        platform: e.platform,
        botId: e.botId,
        eventId: e.eventId,
        status,
        envelope: e.envelope,
        occurredAt: e.occurredAt,
        receivedAt: now,
        processedAt: status !== "received" ? now : null,
        note: e.note ?? null,
        conversation: e.conversation ?? "",
        traceparent: e.traceparent ?? null,
      }),
    );
    return inserted === 1 ? { id } : "duplicate";
  }

  /**
   * The insert, and when it fails, whether it landed anyway (a lost commit
   * acknowledgement, a connection lost after the COMMIT was sent): the id is
   * this call's own, so finding it proves this call recorded the event. Without
   * that, the caller's retry (the platform's redelivery) would be a
   * "duplicate" of a record nobody handles until the next start's replay.
   */
  async #insert(id: string, statement: Parameters<Database["exec"]>[1]): Promise<number> {
    try {
      return await this.db.exec("record-inbound", statement);
    } catch (err) {
      const landed = await this.find(id).catch(() => null);
      if (landed) return 1;
      throw err;
    }
  }

  /** Settles a received event; false when it was settled already (handled, expired or ignored by someone else first). */
  async mark(id: string, status: InboundStatus, note?: string): Promise<boolean> {
    const n = await this.db.exec("mark-inbound", MARK.bind(this.db, { id, status, processedAt: this.now(), note: note ?? null, received: "received" }));
    return n > 0;
  }

  /**
   * One page of the accepted events not yet handled, in recorded order,
   * after the `after` sequence value (replayed at start: page until empty).
   */
  unhandled(limit = 1000, after = 0): Promise<InboundRecord[]> {
    return this.db.query(
      "unhandled-inbound",
      this.db.q
        .selectFrom("InboundEvent")
        .select(COLUMNS)
        .where("status", "=", "received")
        .where("seq", ">", after)
        .orderBy("seq", "asc")
        .orderBy("id", "asc")
        .limit(limit),
    );
  }

  /** A conversation's unhandled events, in recorded order. */
  receivedIn(conversation: string, limit = 50): Promise<InboundRecord[]> {
    return this.db.query(
      "conversation-inbound",
      this.db.q
        .selectFrom("InboundEvent")
        .select(COLUMNS)
        .where("conversation", "=", conversation)
        .where("status", "=", "received")
        .orderBy("seq", "asc")
        .orderBy("id", "asc")
        .limit(limit),
    );
  }

  /** Conversations with unhandled events recorded before `before`. */
  async conversationsWaiting(before: Date, limit = 500): Promise<string[]> {
    const rows = await this.db.query(
      "waiting-conversations",
      this.db.q.selectFrom("InboundEvent").select("conversation").distinct().where("status", "=", "received").where("receivedAt", "<", before).limit(limit),
    );
    return rows.map((r) => r.conversation);
  }

  async find(id: string): Promise<InboundRecord | null> {
    const [r] = await this.db.query("find-inbound", this.db.q.selectFrom("InboundEvent").select(COLUMNS).where("id", "=", id));
    return r ?? null;
  }

  /**
   * Deletes up to `limit` handled events received before `before` (one
   * short statement; the caller loops). Unhandled events are kept whatever
   * their age: they are replayed, or expired, first.
   */
  async prune(before: Date, limit: number): Promise<number> {
    return pruneSettled(this.db, "prune-inbound", "InboundEvent", ["done", "expired", "ignored"], before, limit);
  }
}
