import { sql, type Selectable } from "kysely";
import type { Database } from "./db.js";
import type { DB } from "./sql.js";
import { prepare, type Param } from "./prepared.js";

const MESSAGE_COLUMNS = ["sessionId", "seq", "role", "content", "meta", "createdAt"] as const;

// Every live session loads its window with this (on the primary key): compiled once (prepared.ts).
const RECENT = prepare((b, p: Param<{ sessionId: string; limit: number }>) =>
  b
    .selectFrom("Message")
    .select(MESSAGE_COLUMNS)
    .where("sessionId", "=", p("sessionId"))
    .where("deletedAt", "is", null)
    .orderBy("seq", "desc")
    .limit(p("limit")),
);

export type MessageRecord = Pick<Selectable<DB["Message"]>, (typeof MESSAGE_COLUMNS)[number]>;

export type NewMessage = Pick<MessageRecord, "role" | "content"> & {
  meta?: string | null;
  createdAt?: Date;
  /** The platform message it came from (platform:bot:chat:message), so an edit or delete finds it. */
  sourceId?: string | null;
};

/** A new message's transcript row at `seq`, with the defaults every append uses (no meta, now, no source). */
export const messageRow = (m: NewMessage, seq: number, now: Date) => ({
  seq,
  role: m.role,
  content: m.content,
  meta: m.meta ?? null,
  createdAt: m.createdAt ?? now,
  sourceId: m.sourceId ?? null,
});

/**
 * Transcript messages, ordered by a per-session `seq`. Appends refuse archived
 * sessions: the check and the insert are one transaction.
 */
export class TranscriptStore {
  constructor(readonly db: Database) {}

  /**
   * Appends messages after `afterSeq` (the caller's last persisted seq) and
   * bumps the session's turn count and lastActive. Returns "archived" or
   * "missing" without writing when the session cannot take writes.
   */
  append(
    sessionId: string,
    messages: NewMessage[],
    opts: { turnIncrement?: number } = {},
  ): Promise<{ status: "ok"; lastSeq: number } | { status: "archived" | "missing" }> {
    const b = this.db.q;
    return this.db.sqlTransaction("append-transcript", async (q) => {
      const now = new Date();
      const touched = await q.run(
        b
          .updateTable("Session")
          .set((eb) => ({ lastActive: now, ...(opts.turnIncrement ? { turnCount: eb("turnCount", "+", opts.turnIncrement) } : {}) }))
          .where("id", "=", sessionId)
          .where("archived", "=", false),
      );
      if (touched !== 1) {
        const [s] = await q.all(b.selectFrom("Session").select("archived").where("id", "=", sessionId));
        return { status: s ? "archived" : "missing" } as const;
      }
      const [last] = await q.all(b.selectFrom("Message").select("seq").where("sessionId", "=", sessionId).orderBy("seq", "desc").limit(1));
      let seq = last?.seq ?? 0;
      if (messages.length) {
        await q.run(b.insertInto("Message").values(messages.map((m) => ({ sessionId, ...messageRow(m, ++seq, now) }))));
      }
      return { status: "ok", lastSeq: seq } as const;
    });
  }

  /** The last `limit` messages, oldest first. A message its author deleted is never among them. */
  async recent(sessionId: string, limit: number): Promise<MessageRecord[]> {
    const rows = await this.db.query("recent-messages", RECENT.bind(this.db, { sessionId, limit }));
    return rows.reverse();
  }

  /** Messages with seq > afterSeq, oldest first; deleted ones left out (reflection never sees them). */
  since(sessionId: string, afterSeq: number, limit = 500): Promise<MessageRecord[]> {
    return this.db.query(
      "messages-since",
      this.db.q
        .selectFrom("Message")
        .select(MESSAGE_COLUMNS)
        .where("sessionId", "=", sessionId)
        .where("seq", ">", afterSeq)
        .where("deletedAt", "is", null)
        .orderBy("seq", "asc")
        .limit(limit),
    );
  }

  /**
   * The user edited or deleted the platform message `sourceId`: its
   * transcript entries take the new text (marked edited), or are marked
   * deleted and never read for the model again. Returns the sessions whose
   * transcript changed (their cached windows are stale).
   */
  async applyChange(sourceId: string, change: { kind: "edit"; content: string } | { kind: "delete" }): Promise<string[]> {
    const now = new Date();
    const update = this.db.q
      .updateTable("Message")
      .set(change.kind === "edit" ? { content: change.content, editedAt: now } : { deletedAt: now })
      .where("sourceId", "=", sourceId)
      .where("role", "=", "user")
      .where("deletedAt", "is", null)
      .returning("sessionId");
    const rows = await this.db.sqlTransaction("message-change", (s) => s.all(update));
    return [...new Set(rows.map((r) => r.sessionId))];
  }

  /** The transcript entries that came from one platform message (deleted ones too), for operators and tests. */
  bySource(sourceId: string): Promise<Array<MessageRecord & { editedAt: Date | null; deletedAt: Date | null }>> {
    return this.db.query(
      "messages-by-source",
      this.db.q
        .selectFrom("Message")
        .select([...MESSAGE_COLUMNS, "editedAt", "deletedAt"])
        .where("sourceId", "=", sourceId)
        .orderBy("sessionId")
        .orderBy("seq"),
    );
  }

  async count(sessionId: string): Promise<number> {
    const [r] = await this.db.query(
      "message-count",
      this.db.q
        .selectFrom("Message")
        .select((eb) => eb.fn.countAll<number | string>().as("n"))
        .where("sessionId", "=", sessionId),
    );
    return Number(r?.n ?? 0);
  }

  /**
   * Full-text search over the given sessions' transcripts: every term must
   * appear (case-insensitive substring, the same on SQLite and PostgreSQL).
   * Returns matching session ids with a snippet, most recent match first.
   */
  async search(sessionIds: string[], terms: string[], limit = 20): Promise<Array<{ sessionId: string; seq: number; snippet: string }>> {
    if (sessionIds.length === 0 || terms.length === 0) return [];
    // Case-insensitive substring on both providers (no LIKE, so `%` and `_` in a term are plain characters).
    const pos = this.db.provider === "postgresql" ? "strpos" : "instr";
    let q = this.db.q.selectFrom("Message").select(["sessionId", "seq", "content"]).where("sessionId", "in", sessionIds).where("deletedAt", "is", null);
    for (const t of terms) q = q.where(sql<number>`${sql.raw(pos)}(lower(${sql.ref("content")}), lower(${t}))`, ">", 0);
    const rows = await this.db.query("message-search", q.orderBy("createdAt", "desc").limit(limit * 5));
    const seen = new Set<string>();
    const out: Array<{ sessionId: string; seq: number; snippet: string }> = [];
    for (const r of rows) {
      if (seen.has(r.sessionId)) continue;
      seen.add(r.sessionId);
      const at = Math.max(0, r.content.toLowerCase().indexOf(terms[0]!.toLowerCase()) - 40);
      out.push({ sessionId: r.sessionId, seq: r.seq, snippet: r.content.slice(at, at + 120) });
      if (out.length >= limit) break;
    }
    return out;
  }
}
