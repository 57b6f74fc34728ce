import type { Database } from "./db.js";
import { StoreError, isUniqueViolation } from "./errors.js";
import { toBool, toDate, toDateOrNull, type Sql, type SqlValue } from "./sql.js";

/** A session row as stored. The domain maps it to and from Info (src/session/info.ts). */
export interface SessionRecord {
  id: string;
  agentId: string;
  userId: string;
  groupId: string | null;
  channel: string;
  kind: string;
  projectId: string | null;
  title: string | null;
  parentId: string | null;
  persona: string | null;
  metadata: string;
  turnCount: number;
  createdAt: Date;
  lastActive: Date;
  archived: boolean;
  archivedAt: Date | null;
  /** Why the session ended (see SESSION_END_REASONS in src/session/info.ts); null while it is active. */
  endReason: string | null;
}

export interface BindingRecord {
  key: string;
  scope: string;
  agentId: string;
  userId: string;
  groupId: string | null;
  kind: string;
  channel: string;
  sessionId: string;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export type NewBinding = Omit<BindingRecord, "sessionId" | "version" | "createdAt" | "updatedAt">;

export interface SessionFilter {
  /** Omitted only by operator tools (CLI, console), never on a user's behalf. */
  userId?: string;
  agentId?: string;
  kinds?: string[];
  excludeKinds?: string[];
  includeArchived?: boolean;
  projectId?: string;
  channel?: string;
  limit?: number;
  offset?: number;
}

export interface ReviewFilter {
  agentId?: string;
  kinds?: string[];
  excludeKinds?: string[];
  privateOnly?: boolean;
  activeSince?: Date;
  includeArchived?: boolean;
  limit?: number;
}

export interface RotateInput {
  binding: NewBinding;
  /** Compare-and-rotate: the session the caller believes is current. */
  expectedSessionId?: string;
  successor: SessionRecord;
  /** Recorded on the session that ends (new, reset, rotate, ...). */
  reason?: string;
  /**
   * The inbound event that asked for the rotation. Every other unhandled
   * event of its conversation recorded before the rotation commits is
   * stamped with the session it arrived under (arrivalSessionId), so a
   * `/new` among them compares against that session, not the successor.
   */
  stampInbound?: string;
}

export interface RotateResult {
  previous: SessionRecord | null;
  current: SessionRecord;
  binding: BindingRecord;
}

function row(r: SessionRecord): SessionRecord {
  return {
    id: r.id,
    agentId: r.agentId,
    userId: r.userId,
    groupId: r.groupId,
    channel: r.channel,
    kind: r.kind,
    projectId: r.projectId,
    title: r.title,
    parentId: r.parentId,
    persona: r.persona,
    metadata: r.metadata,
    turnCount: r.turnCount,
    createdAt: r.createdAt,
    lastActive: r.lastActive,
    archived: r.archived,
    archivedAt: r.archivedAt,
    endReason: r.endReason ?? null,
  };
}

const SESSION_COLUMNS = `"id","agentId","userId","groupId","channel","kind","projectId","title","parentId","persona","metadata","turnCount","createdAt","lastActive","archived","archivedAt","endReason"`;
const BINDING_COLUMNS = `"key","scope","agentId","userId","groupId","kind","channel","sessionId","version","createdAt","updatedAt"`;

/** A raw row (ISO text and 0/1 on SQLite) as a SessionRecord. */
function sessionOf(r: Record<string, unknown>): SessionRecord {
  return {
    ...(r as unknown as SessionRecord),
    turnCount: Number(r.turnCount),
    createdAt: toDate(r.createdAt),
    lastActive: toDate(r.lastActive),
    archived: toBool(r.archived),
    archivedAt: toDateOrNull(r.archivedAt),
    endReason: (r.endReason as string | null | undefined) ?? null,
  };
}

function bindingOf(r: Record<string, unknown>): BindingRecord {
  return { ...(r as unknown as BindingRecord), version: Number(r.version), createdAt: toDate(r.createdAt), updatedAt: toDate(r.updatedAt) };
}

async function sessionIn(q: Sql, id: string): Promise<SessionRecord | null> {
  const [r] = await q.all<Record<string, unknown>>(`SELECT ${SESSION_COLUMNS} FROM "Session" WHERE "id" = ?`, [id]);
  return r ? sessionOf(r) : null;
}

async function bindingIn(q: Sql, key: string): Promise<BindingRecord | null> {
  const [r] = await q.all<Record<string, unknown>>(`SELECT ${BINDING_COLUMNS} FROM "Binding" WHERE "key" = ?`, [key]);
  return r ? bindingOf(r) : null;
}

const sessionValues = (r: SessionRecord): SqlValue[] => [
  r.id,
  r.agentId,
  r.userId,
  r.groupId,
  r.channel,
  r.kind,
  r.projectId,
  r.title,
  r.parentId,
  r.persona,
  r.metadata,
  r.turnCount,
  r.createdAt,
  r.lastActive,
  r.archived,
  r.archivedAt,
  r.endReason,
];

async function insertSession(q: Sql, rec: SessionRecord): Promise<SessionRecord> {
  const r = row(rec);
  await q.run(`INSERT INTO "Session" (${SESSION_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, sessionValues(r));
  return r;
}

async function insertBinding(q: Sql, b: NewBinding, sessionId: string, now: Date): Promise<BindingRecord> {
  const rec: BindingRecord = {
    key: b.key,
    scope: b.scope,
    agentId: b.agentId,
    userId: b.userId,
    groupId: b.groupId,
    kind: b.kind,
    channel: b.channel,
    sessionId,
    version: 0,
    createdAt: now,
    updatedAt: now,
  };
  await q.run(`INSERT INTO "Binding" (${BINDING_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)`, [
    rec.key,
    rec.scope,
    rec.agentId,
    rec.userId,
    rec.groupId,
    rec.kind,
    rec.channel,
    rec.sessionId,
    rec.version,
    rec.createdAt,
    rec.updatedAt,
  ]);
  return rec;
}

/** Sessions and the bindings that point at them. Rotation is atomic here. */
export class SessionStore {
  constructor(readonly db: Database) {}

  // Reads are raw SQL: the CLI and the console read through them, and loading Prisma costs a CLI call more than the rest of it.
  async find(id: string): Promise<SessionRecord | null> {
    const [r] = await this.db.query<Record<string, unknown>>("find-session", `SELECT ${SESSION_COLUMNS} FROM "Session" WHERE "id" = ?`, [id]);
    return r ? sessionOf(r) : null;
  }

  findMany(ids: string[]): Promise<SessionRecord[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.db.read((c) => c.session.findMany({ where: { id: { in: ids } } }), "session-findMany");
  }

  async insert(rec: SessionRecord): Promise<SessionRecord> {
    try {
      return await this.db.write((c) => c.session.create({ data: row(rec) }), "session-create");
    } catch (e) {
      if (isUniqueViolation(e)) throw new StoreError("Conflict", `session ${rec.id} already exists`, { cause: e });
      throw e;
    }
  }

  async list(f: SessionFilter): Promise<SessionRecord[]> {
    const where: string[] = [];
    const params: SqlValue[] = [];
    const eq = (col: string, v: SqlValue) => (where.push(`"${col}" = ?`), params.push(v));
    const among = (col: string, values: string[], not: boolean) => {
      where.push(`"${col}" ${not ? "NOT IN" : "IN"} (${values.map(() => "?").join(",")})`);
      params.push(...values);
    };
    if (f.userId !== undefined) eq("userId", f.userId);
    if (f.agentId !== undefined) eq("agentId", f.agentId);
    if (f.kinds?.length) among("kind", f.kinds, false);
    if (f.excludeKinds?.length) among("kind", f.excludeKinds, true);
    if (!f.includeArchived) eq("archived", false);
    if (f.projectId !== undefined) eq("projectId", f.projectId);
    if (f.channel !== undefined) eq("channel", f.channel);
    const rows = await this.db.query<Record<string, unknown>>(
      "list-sessions",
      `SELECT ${SESSION_COLUMNS} FROM "Session"${where.length ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY "lastActive" DESC, "createdAt" DESC, "id" ASC LIMIT ? OFFSET ?`,
      [...params, f.limit ?? 50, f.offset ?? 0],
    );
    return rows.map(sessionOf);
  }

  /** Sessions due for reflection, each with the highest transcript seq it has (the periodic sweep: raw SQL). */
  async listForReview(f: ReviewFilter): Promise<Array<SessionRecord & { latestSeq: number }>> {
    const where: string[] = [];
    const params: SqlValue[] = [];
    const list = (col: string, values: string[], not: boolean) => {
      where.push(`"${col}" ${not ? "NOT IN" : "IN"} (${values.map(() => "?").join(",")})`);
      params.push(...values);
    };
    if (f.agentId) where.push(`"agentId" = ?`), params.push(f.agentId);
    if (f.kinds?.length) list("kind", f.kinds, false);
    if (f.excludeKinds?.length) list("kind", f.excludeKinds, true);
    if (f.privateOnly) where.push(`"groupId" IS NULL AND "channel" LIKE ?`), params.push("%:dm:%");
    if (f.activeSince) where.push(`"lastActive" >= ?`), params.push(f.activeSince);
    if (!f.includeArchived) where.push(`"archived" = ?`), params.push(false);
    const rows = await this.db.query<Record<string, unknown>>(
      "sessions-for-review",
      `SELECT ${SESSION_COLUMNS} FROM "Session"${where.length ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY "lastActive" DESC, "id" ASC LIMIT ?`,
      [...params, f.limit ?? 100],
    );
    if (rows.length === 0) return [];
    const ids = rows.map((r) => String(r.id));
    const seqs = await this.db.query<{ sessionId: string; seq: number | null }>(
      "latest-seqs",
      `SELECT "sessionId", MAX("seq") AS "seq" FROM "Message" WHERE "sessionId" IN (${ids.map(() => "?").join(",")}) GROUP BY "sessionId"`,
      ids,
    );
    const latest = new Map(seqs.map((s) => [s.sessionId, Number(s.seq ?? 0)]));
    return rows.map((r) => ({ ...sessionOf(r), latestSeq: latest.get(String(r.id)) ?? 0 }));
  }

  /** Marks a session archived. Returns the updated row, or null if it does not exist. */
  archive(id: string, reason = "archive"): Promise<SessionRecord | null> {
    return this.db.transaction("archive", async (tx) => {
      await tx.session.updateMany({ where: { id, archived: false }, data: { archived: true, archivedAt: new Date(), endReason: reason } });
      return tx.session.findUnique({ where: { id } });
    });
  }

  /**
   * Updates an active session. Returns "ok", "archived" or "missing"; an
   * archived session is never written.
   */
  async update(
    id: string,
    patch: Partial<Pick<SessionRecord, "title" | "persona" | "metadata" | "projectId" | "lastActive">> & { turnIncrement?: number },
  ): Promise<"ok" | "archived" | "missing"> {
    const { turnIncrement, ...rest } = patch;
    return this.db.transaction("update-session", async (tx) => {
      const n = await tx.session.updateMany({
        where: { id, archived: false },
        data: { ...rest, ...(turnIncrement ? { turnCount: { increment: turnIncrement } } : {}) },
      });
      if (n.count === 1) return "ok";
      const s = await tx.session.findUnique({ where: { id }, select: { archived: true } });
      return s ? "archived" : "missing";
    });
  }

  /**
   * Sets (or, with undefined, removes) single metadata keys in the stored
   * JSON, in one statement: keys another process set meanwhile are kept.
   * Returns "ok", "archived" or "missing"; an archived session is never written.
   */
  async mergeMetadata(id: string, patch: Record<string, unknown>): Promise<"ok" | "archived" | "missing"> {
    let expr = `"metadata"`;
    const params: SqlValue[] = [];
    for (const [key, value] of Object.entries(patch)) {
      if (this.db.provider === "postgresql") {
        if (value === undefined) (expr = `(${expr}::jsonb - ?::text)::text`), params.push(key);
        else (expr = `(${expr}::jsonb || jsonb_build_object(?::text, (?::text)::jsonb))::text`), params.push(key, JSON.stringify(value));
      } else {
        // A JSON path names the key quoted, so keys with dots (model.name) stay one key.
        const path = `$."${key.replace(/["\\]/g, "")}"`;
        if (value === undefined) (expr = `json_remove(${expr}, ?)`), params.push(path);
        else (expr = `json_set(${expr}, ?, json(?))`), params.push(path, JSON.stringify(value));
      }
    }
    if (!params.length) return "ok";
    const n = await this.db.exec("merge-metadata", `UPDATE "Session" SET "metadata" = ${expr} WHERE "id" = ? AND "archived" = ?`, [...params, id, false]);
    if (n === 1) return "ok";
    const rec = await this.find(id);
    return rec ? "archived" : "missing";
  }

  async findBinding(key: string): Promise<BindingRecord | null> {
    const [r] = await this.db.query<Record<string, unknown>>("find-binding", `SELECT ${BINDING_COLUMNS} FROM "Binding" WHERE "key" = ?`, [key]);
    return r ? bindingOf(r) : null;
  }

  async bindingsForSession(sessionId: string): Promise<BindingRecord[]> {
    const rows = await this.db.query<Record<string, unknown>>(
      "session-bindings",
      `SELECT ${BINDING_COLUMNS} FROM "Binding" WHERE "sessionId" = ? ORDER BY "key"`,
      [sessionId],
    );
    return rows.map(bindingOf);
  }

  async listBindings(opts: { limit?: number; offset?: number } = {}): Promise<BindingRecord[]> {
    const rows = await this.db.query<Record<string, unknown>>(
      "list-bindings",
      `SELECT ${BINDING_COLUMNS} FROM "Binding" ORDER BY "updatedAt" DESC, "key" ASC LIMIT ? OFFSET ?`,
      [opts.limit ?? 100, opts.offset ?? 0],
    );
    return rows.map(bindingOf);
  }

  /**
   * Creates a binding pointing at a session: the session is inserted first
   * when `session` is given, or an existing one is adopted. If another caller
   * created the binding first, nothing is written and the winner is returned.
   */
  async bind(
    binding: NewBinding,
    target: { session: SessionRecord } | { adoptId: string },
  ): Promise<{ binding: BindingRecord; session: SessionRecord; created: boolean }> {
    try {
      // A conversation's first message: raw statements (sql.ts). On PostgreSQL a new session and its binding are one statement (one round trip, atomic).
      if ("session" in target && this.db.provider === "postgresql") {
        const session = row(target.session);
        const now = new Date();
        await this.db.exec(
          "bind",
          `WITH s AS (INSERT INTO "Session" (${SESSION_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING "id") INSERT INTO "Binding" (${BINDING_COLUMNS}) SELECT ?,?,?,?,?,?,?,s."id",?,?,? FROM s`,
          [...sessionValues(session), binding.key, binding.scope, binding.agentId, binding.userId, binding.groupId, binding.kind, binding.channel, 0, now, now],
        );
        return { binding: { ...binding, sessionId: session.id, version: 0, createdAt: now, updatedAt: now }, session, created: true };
      }
      return await this.db.sqlTransaction("bind", async (q) => {
        let session: SessionRecord;
        if ("session" in target) session = await insertSession(q, target.session);
        else {
          const found = await sessionIn(q, target.adoptId);
          if (!found || found.archived) throw new StoreError("Stale", `session ${target.adoptId} cannot be adopted`);
          session = found;
        }
        const b = await insertBinding(q, binding, session.id, new Date());
        return { binding: b, session, created: true };
      });
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      const existing = await this.#current(binding.key);
      if (!existing) throw e;
      return { ...existing, created: false };
    }
  }

  async #current(key: string): Promise<{ binding: BindingRecord; session: SessionRecord } | null> {
    const [b] = await this.db.query<Record<string, unknown>>("current-binding", `SELECT ${BINDING_COLUMNS} FROM "Binding" WHERE "key" = ?`, [key]);
    if (!b) return null;
    const [r] = await this.db.query<Record<string, unknown>>("current-session", `SELECT ${SESSION_COLUMNS} FROM "Session" WHERE "id" = ?`, [
      String(b.sessionId),
    ]);
    return r ? { binding: bindingOf(b), session: sessionOf(r) } : null;
  }

  /** The binding and the session it points at, read together. */
  current(key: string): Promise<{ binding: BindingRecord; session: SessionRecord } | null> {
    return this.#current(key);
  }

  /**
   * Archives the binding's current session and makes `successor` current, in
   * one transaction. The successor is written first (it takes the write lock
   * on SQLite), then the binding moves only where it still points at the
   * expected session: exactly one of many concurrent rotations can match.
   * Throws StoreError("Stale") and writes nothing when the binding moved on.
   */
  rotate(input: RotateInput): Promise<RotateResult> {
    return this.db.sqlTransaction("rotate", (q) => rotateIn(q, input));
  }

  /**
   * The session the conversation was bound to when this inbound event
   * arrived, if a rotation has moved the binding since (see RotateInput.stampInbound).
   */
  async arrivalOf(inboundId: string): Promise<string | null> {
    const [r] = await this.db.query<{ arrivalSessionId: string | null }>("inbound-arrival", `SELECT "arrivalSessionId" FROM "InboundEvent" WHERE "id" = ?`, [
      inboundId,
    ]);
    return r?.arrivalSessionId ?? null;
  }

  /** Whether anything was said in the session yet (a transcript entry exists). */
  async hasMessages(id: string): Promise<boolean> {
    const rows = await this.db.query<Record<string, unknown>>("session-has-messages", `SELECT 1 AS "one" FROM "Message" WHERE "sessionId" = ? LIMIT 1`, [id]);
    return rows.length > 0;
  }

  /** Points an existing binding at another session of the same conversation (for /resume). */
  repoint(key: string, expectedSessionId: string, targetId: string): Promise<BindingRecord> {
    return this.db.transaction("repoint", async (tx) => {
      const moved = await tx.binding.updateMany({
        where: { key, sessionId: expectedSessionId },
        data: { sessionId: targetId, version: { increment: 1 }, updatedAt: new Date() },
      });
      if (moved.count !== 1) throw new StoreError("Stale", `binding ${key} no longer points at ${expectedSessionId}`);
      await tx.session.updateMany({ where: { id: targetId }, data: { archived: false, archivedAt: null, endReason: null, lastActive: new Date() } });
      await tx.session.updateMany({ where: { id: expectedSessionId, archived: false }, data: { archived: true, archivedAt: new Date(), endReason: "resume" } });
      return (await tx.binding.findUnique({ where: { key } }))!;
    });
  }
}

async function rotateIn(q: Sql, input: RotateInput): Promise<RotateResult> {
  const now = new Date();
  const key = input.binding.key;
  const current = await insertSession(q, input.successor);
  const existing = await bindingIn(q, key);
  if (!existing) {
    if (input.expectedSessionId) throw new StoreError("Stale", `binding ${key} does not exist yet`);
    const binding = await insertBinding(q, input.binding, current.id, now);
    return { previous: null, current, binding };
  }
  const expected = input.expectedSessionId ?? existing.sessionId;
  const moved = await q.run(`UPDATE "Binding" SET "sessionId" = ?, "version" = "version" + 1, "updatedAt" = ? WHERE "key" = ? AND "sessionId" = ?`, [
    current.id,
    now,
    key,
    expected,
  ]);
  if (moved !== 1) throw new StoreError("Stale", `binding ${key} no longer points at ${expected}`);
  await q.run(`UPDATE "Session" SET "archived" = ?, "archivedAt" = ?, "endReason" = ? WHERE "id" = ? AND "archived" = ?`, [
    true,
    now,
    input.reason ?? "rotate",
    expected,
    false,
  ]);
  if (input.stampInbound) {
    // Committed with the move: an event recorded before it arrived under `expected`; one recorded after finds no stamp and the binding as it is.
    await q.run(
      `UPDATE "InboundEvent" SET "arrivalSessionId" = ? WHERE "conversation" = (SELECT "conversation" FROM "InboundEvent" WHERE "id" = ?) AND "status" = ? AND "arrivalSessionId" IS NULL AND "id" <> ?`,
      [expected, input.stampInbound, "received", input.stampInbound],
    );
  }
  const previous = await sessionIn(q, expected);
  const binding = (await bindingIn(q, key))!;
  return { previous, current, binding };
}
