import type { Database } from "./db.js";
import { toDate } from "./sql.js";

export interface MessageRecord {
  sessionId: string;
  seq: number;
  role: string;
  content: string;
  meta: string | null;
  createdAt: Date;
}

export type NewMessage = Pick<MessageRecord, "role" | "content"> & {
  meta?: string | null;
  createdAt?: Date;
  /** The platform message it came from (platform:bot:chat:message), so an edit or delete finds it. */
  sourceId?: string | null;
};

const MESSAGE_COLUMNS = `"sessionId","seq","role","content","meta","createdAt"`;
const messageOf = (r: Record<string, unknown>): MessageRecord => ({ ...(r as unknown as MessageRecord), seq: Number(r.seq), createdAt: toDate(r.createdAt) });

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
    return this.db.transaction("append-transcript", async (tx) => {
      const now = new Date();
      const touched = await tx.session.updateMany({
        where: { id: sessionId, archived: false },
        data: { lastActive: now, ...(opts.turnIncrement ? { turnCount: { increment: opts.turnIncrement } } : {}) },
      });
      if (touched.count !== 1) {
        const s = await tx.session.findUnique({ where: { id: sessionId }, select: { archived: true } });
        return { status: s ? "archived" : "missing" } as const;
      }
      const last = await tx.message.findFirst({ where: { sessionId }, orderBy: { seq: "desc" }, select: { seq: true } });
      let seq = last?.seq ?? 0;
      if (messages.length) {
        await tx.message.createMany({
          data: messages.map((m) => ({
            sessionId,
            seq: ++seq,
            role: m.role,
            content: m.content,
            meta: m.meta ?? null,
            createdAt: m.createdAt ?? now,
            sourceId: m.sourceId ?? null,
          })),
        });
      }
      return { status: "ok", lastSeq: seq } as const;
    });
  }

  /** The last `limit` messages, oldest first. A message its author deleted is never among them. */
  async recent(sessionId: string, limit: number): Promise<MessageRecord[]> {
    // Every live session loads its window with this: raw SQL on the primary key.
    const rows = await this.db.query<Record<string, unknown>>(
      "recent-messages",
      `SELECT ${MESSAGE_COLUMNS} FROM "Message" WHERE "sessionId" = ? AND "deletedAt" IS NULL ORDER BY "seq" DESC LIMIT ?`,
      [sessionId, limit],
    );
    return rows.reverse().map(messageOf);
  }

  /** Messages with seq > afterSeq, oldest first; deleted ones left out (reflection never sees them). */
  async since(sessionId: string, afterSeq: number, limit = 500): Promise<MessageRecord[]> {
    const rows = await this.db.query<Record<string, unknown>>(
      "messages-since",
      `SELECT ${MESSAGE_COLUMNS} FROM "Message" WHERE "sessionId" = ? AND "seq" > ? AND "deletedAt" IS NULL ORDER BY "seq" ASC LIMIT ?`,
      [sessionId, afterSeq, limit],
    );
    return rows.map(messageOf);
  }

  /**
   * The user edited or deleted the platform message `sourceId`: its
   * transcript entries take the new text (marked edited), or are marked
   * deleted and never read for the model again. Returns the sessions whose
   * transcript changed (their cached windows are stale).
   */
  async applyChange(sourceId: string, change: { kind: "edit"; content: string } | { kind: "delete" }): Promise<string[]> {
    const now = new Date();
    const rows = await this.db.sqlTransaction("message-change", (q) =>
      change.kind === "edit"
        ? q.all<{ sessionId: string }>(
            `UPDATE "Message" SET "content" = ?, "editedAt" = ? WHERE "sourceId" = ? AND "role" = ? AND "deletedAt" IS NULL RETURNING "sessionId"`,
            [change.content, now, sourceId, "user"],
          )
        : q.all<{ sessionId: string }>(
            `UPDATE "Message" SET "deletedAt" = ? WHERE "sourceId" = ? AND "role" = ? AND "deletedAt" IS NULL RETURNING "sessionId"`,
            [now, sourceId, "user"],
          ),
    );
    return [...new Set(rows.map((r) => r.sessionId))];
  }

  /** The transcript entries that came from one platform message (deleted ones too), for operators and tests. */
  async bySource(sourceId: string): Promise<Array<MessageRecord & { editedAt: Date | null; deletedAt: Date | null }>> {
    const rows = await this.db.query<Record<string, unknown>>(
      "messages-by-source",
      `SELECT ${MESSAGE_COLUMNS},"editedAt","deletedAt" FROM "Message" WHERE "sourceId" = ? ORDER BY "sessionId", "seq"`,
      [sourceId],
    );
    return rows.map((r) => ({ ...messageOf(r), editedAt: r.editedAt ? toDate(r.editedAt) : null, deletedAt: r.deletedAt ? toDate(r.deletedAt) : null }));
  }

  count(sessionId: string): Promise<number> {
    return this.db.read((c) => c.message.count({ where: { sessionId } }), "message-count");
  }

  /**
   * Full-text search over the given sessions' transcripts: every term must
   * appear (case-insensitive substring, the same on SQLite and PostgreSQL).
   * Returns matching session ids with a snippet, most recent match first.
   */
  async search(sessionIds: string[], terms: string[], limit = 20): Promise<Array<{ sessionId: string; seq: number; snippet: string }>> {
    if (sessionIds.length === 0 || terms.length === 0) return [];
    const insensitive = this.db.provider === "postgresql" ? ({ mode: "insensitive" } as const) : {};
    const rows = await this.db.read(
      (c) =>
        c.message.findMany({
          where: { sessionId: { in: sessionIds }, deletedAt: null, AND: terms.map((t) => ({ content: { contains: t, ...insensitive } })) },
          orderBy: { createdAt: "desc" },
          take: limit * 5,
        }),
      "message-findMany",
    );
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
