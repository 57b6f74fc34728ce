import type { Database } from "./db.js";
import { StoreError, isUniqueViolation } from "./errors.js";
import { sql, type Expression, type Selectable } from "kysely";
import type { DB, Sql } from "./sql.js";
import { prepare, type Dialect, type Param } from "./prepared.js";

/** A session row as stored. The domain maps it to and from Info (src/session/info.ts). endReason: why it ended (SESSION_END_REASONS). */
export type SessionRecord = Selectable<DB["Session"]>;

export type BindingRecord = Selectable<DB["Binding"]>;

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

// A conversation's first message and every lookup by id or key: compiled once (prepared.ts).
const SESSION_COLUMNS = [
  "id",
  "agentId",
  "userId",
  "groupId",
  "channel",
  "kind",
  "projectId",
  "title",
  "parentId",
  "persona",
  "metadata",
  "turnCount",
  "createdAt",
  "lastActive",
  "archived",
  "archivedAt",
  "endReason",
] as const satisfies ReadonlyArray<keyof SessionRecord>;
const BINDING_COLUMNS = [
  "key",
  "scope",
  "agentId",
  "userId",
  "groupId",
  "kind",
  "channel",
  "sessionId",
  "version",
  "createdAt",
  "updatedAt",
] as const satisfies ReadonlyArray<keyof BindingRecord>;
/** Every column of a record as a marker of the same name. */
const markers = <T, K extends keyof T & string>(p: Param<T>, cols: readonly K[]): Pick<T, K> => Object.fromEntries(cols.map((c) => [c, p(c)])) as Pick<T, K>;

const FIND_SESSION = prepare((b, p: Param<{ id: string }>) => b.selectFrom("Session").selectAll().where("id", "=", p("id")));
const FIND_BINDING = prepare((b, p: Param<{ key: string }>) => b.selectFrom("Binding").selectAll().where("key", "=", p("key")));
const INSERT_SESSION = prepare((b, p: Param<SessionRecord>) => b.insertInto("Session").values(markers(p, SESSION_COLUMNS)));
const INSERT_BINDING = prepare((b, p: Param<BindingRecord>) => b.insertInto("Binding").values(markers(p, BINDING_COLUMNS)));
/** PostgreSQL: a new session and its binding in one statement (one round trip, atomic). */
const INSERT_SESSION_AND_BINDING = prepare((b, p: Param<SessionRecord & { [K in keyof BindingRecord as `b_${K}`]: BindingRecord[K] }>) =>
  b
    .with("s", (w) => w.insertInto("Session").values(markers(p, SESSION_COLUMNS)).returning("id"))
    .insertInto("Binding")
    .columns(["key", "scope", "agentId", "userId", "groupId", "kind", "channel", "sessionId", "version", "createdAt", "updatedAt"])
    .expression((eb) =>
      eb
        .selectFrom("s")
        .select((s) => [
          s.val(p("b_key")).as("key"),
          s.val(p("b_scope")).as("scope"),
          s.val(p("b_agentId")).as("agentId"),
          s.val(p("b_userId")).as("userId"),
          s.val(p("b_groupId")).as("groupId"),
          s.val(p("b_kind")).as("kind"),
          s.val(p("b_channel")).as("channel"),
          "s.id",
          s.val(p("b_version")).as("version"),
          s.val(p("b_createdAt")).as("createdAt"),
          s.val(p("b_updatedAt")).as("updatedAt"),
        ]),
    ),
);

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

async function sessionIn(db: Dialect, s: Sql, id: string): Promise<SessionRecord | null> {
  const [r] = await s.all(FIND_SESSION.bind(db, { id }));
  return r ?? null;
}

async function bindingIn(db: Dialect, s: Sql, key: string): Promise<BindingRecord | null> {
  const [r] = await s.all(FIND_BINDING.bind(db, { key }));
  return r ?? null;
}

async function insertSession(db: Dialect, s: Sql, rec: SessionRecord): Promise<SessionRecord> {
  const r = row(rec);
  await s.run(INSERT_SESSION.bind(db, r));
  return r;
}

function newBinding(b: NewBinding, sessionId: string, now: Date): BindingRecord {
  return {
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
}

async function insertBinding(db: Dialect, s: Sql, b: NewBinding, sessionId: string, now: Date): Promise<BindingRecord> {
  const rec = newBinding(b, sessionId, now);
  await s.run(INSERT_BINDING.bind(db, rec));
  return rec;
}

/** Sessions and the bindings that point at them. Rotation is atomic here. */
export class SessionStore {
  constructor(readonly db: Database) {}

  // Reads never load Prisma: the CLI and the console read through them.
  async find(id: string): Promise<SessionRecord | null> {
    const [r] = await this.db.query("find-session", FIND_SESSION.bind(this.db, { id }));
    return r ?? null;
  }

  findMany(ids: string[]): Promise<SessionRecord[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.db.query("session-findMany", this.db.q.selectFrom("Session").selectAll().where("id", "in", ids));
  }

  async insert(rec: SessionRecord): Promise<SessionRecord> {
    try {
      const r = row(rec);
      await this.db.exec("session-create", INSERT_SESSION.bind(this.db, r));
      return r;
    } catch (e) {
      if (isUniqueViolation(e)) throw new StoreError("Conflict", `session ${rec.id} already exists`, { cause: e });
      throw e;
    }
  }

  list(f: SessionFilter): Promise<SessionRecord[]> {
    let q = this.db.q.selectFrom("Session").selectAll();
    if (f.userId !== undefined) q = q.where("userId", "=", f.userId);
    if (f.agentId !== undefined) q = q.where("agentId", "=", f.agentId);
    if (f.kinds?.length) q = q.where("kind", "in", f.kinds);
    if (f.excludeKinds?.length) q = q.where("kind", "not in", f.excludeKinds);
    if (!f.includeArchived) q = q.where("archived", "=", false);
    if (f.projectId !== undefined) q = q.where("projectId", "=", f.projectId);
    if (f.channel !== undefined) q = q.where("channel", "=", f.channel);
    return this.db.query(
      "list-sessions",
      q
        .orderBy("lastActive", "desc")
        .orderBy("createdAt", "desc")
        .orderBy("id", "asc")
        .limit(f.limit ?? 50)
        .offset(f.offset ?? 0),
    );
  }

  /** Sessions due for reflection, each with the highest transcript seq it has (the periodic sweep). */
  async listForReview(f: ReviewFilter): Promise<Array<SessionRecord & { latestSeq: number }>> {
    let q = this.db.q.selectFrom("Session").selectAll();
    if (f.agentId) q = q.where("agentId", "=", f.agentId);
    if (f.kinds?.length) q = q.where("kind", "in", f.kinds);
    if (f.excludeKinds?.length) q = q.where("kind", "not in", f.excludeKinds);
    if (f.privateOnly) q = q.where("groupId", "is", null).where("channel", "like", "%:dm:%");
    if (f.activeSince) q = q.where("lastActive", ">=", f.activeSince);
    if (!f.includeArchived) q = q.where("archived", "=", false);
    const rows = await this.db.query(
      "sessions-for-review",
      q
        .orderBy("lastActive", "desc")
        .orderBy("id", "asc")
        .limit(f.limit ?? 100),
    );
    if (rows.length === 0) return [];
    const seqs = await this.db.query(
      "latest-seqs",
      this.db.q
        .selectFrom("Message")
        .select((eb) => ["sessionId", eb.fn.max("seq").as("seq")])
        .where(
          "sessionId",
          "in",
          rows.map((r) => r.id),
        )
        .groupBy("sessionId"),
    );
    const latest = new Map(seqs.map((s) => [s.sessionId, Number(s.seq ?? 0)]));
    return rows.map((r) => ({ ...r, latestSeq: latest.get(r.id) ?? 0 }));
  }

  /** Marks a session archived. Returns the updated row, or null if it does not exist. */
  archive(id: string, reason = "archive"): Promise<SessionRecord | null> {
    const b = this.db.q;
    return this.db.sqlTransaction("archive", async (q) => {
      await q.run(
        b.updateTable("Session").set({ archived: true, archivedAt: new Date(), endReason: reason }).where("id", "=", id).where("archived", "=", false),
      );
      const [r] = await q.all(b.selectFrom("Session").selectAll().where("id", "=", id));
      return r ?? null;
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
    const b = this.db.q;
    return this.db.sqlTransaction("update-session", async (q) => {
      // An empty patch still answers whether the session takes writes (SET "id" = "id" changes nothing).
      const n = await q.run(
        b
          .updateTable("Session")
          .set((eb) => ({ id: eb.ref("id"), ...rest, ...(turnIncrement ? { turnCount: eb("turnCount", "+", turnIncrement) } : {}) }))
          .where("id", "=", id)
          .where("archived", "=", false),
      );
      if (n === 1) return "ok";
      const [s] = await q.all(b.selectFrom("Session").select("archived").where("id", "=", id));
      return s ? "archived" : "missing";
    });
  }

  /**
   * Sets (or, with undefined, removes) single metadata keys in the stored
   * JSON, in one statement: keys another process set meanwhile are kept.
   * Returns "ok", "archived" or "missing"; an archived session is never written.
   */
  async mergeMetadata(id: string, patch: Record<string, unknown>): Promise<"ok" | "archived" | "missing"> {
    const entries = Object.entries(patch);
    if (!entries.length) return "ok";
    let expr: Expression<string> = sql<string>`"metadata"`;
    for (const [key, value] of entries) {
      if (this.db.provider === "postgresql") {
        expr =
          value === undefined
            ? sql<string>`(${expr}::jsonb - ${key}::text)::text`
            : sql<string>`(${expr}::jsonb || jsonb_build_object(${key}::text, (${JSON.stringify(value)}::text)::jsonb))::text`;
      } else {
        // A JSON path names the key quoted, so keys with dots (model.name) stay one key.
        const path = `$."${key.replace(/["\\]/g, "")}"`;
        expr = value === undefined ? sql<string>`json_remove(${expr}, ${path})` : sql<string>`json_set(${expr}, ${path}, json(${JSON.stringify(value)}))`;
      }
    }
    const n = await this.db.exec("merge-metadata", this.db.q.updateTable("Session").set({ metadata: expr }).where("id", "=", id).where("archived", "=", false));
    if (n === 1) return "ok";
    const rec = await this.find(id);
    return rec ? "archived" : "missing";
  }

  async findBinding(key: string): Promise<BindingRecord | null> {
    const [r] = await this.db.query("find-binding", FIND_BINDING.bind(this.db, { key }));
    return r ?? null;
  }

  bindingsForSession(sessionId: string): Promise<BindingRecord[]> {
    return this.db.query("session-bindings", this.db.q.selectFrom("Binding").selectAll().where("sessionId", "=", sessionId).orderBy("key"));
  }

  listBindings(opts: { limit?: number; offset?: number } = {}): Promise<BindingRecord[]> {
    return this.db.query(
      "list-bindings",
      this.db.q
        .selectFrom("Binding")
        .selectAll()
        .orderBy("updatedAt", "desc")
        .orderBy("key", "asc")
        .limit(opts.limit ?? 100)
        .offset(opts.offset ?? 0),
    );
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
      // A conversation's first message. On PostgreSQL a new session and its binding are one statement (one round trip, atomic).
      if ("session" in target && this.db.provider === "postgresql") {
        const session = row(target.session);
        const b = newBinding(binding, session.id, new Date());
        const bound = Object.fromEntries(BINDING_COLUMNS.map((c) => [`b_${c}`, b[c]])) as { [K in keyof BindingRecord as `b_${K}`]: BindingRecord[K] };
        await this.db.exec("bind", INSERT_SESSION_AND_BINDING.bind(this.db, { ...session, ...bound }));
        return { binding: b, session, created: true };
      }
      return await this.db.sqlTransaction("bind", async (s) => {
        let session: SessionRecord;
        if ("session" in target) session = await insertSession(this.db, s, target.session);
        else {
          const found = await sessionIn(this.db, s, target.adoptId);
          if (!found || found.archived) throw new StoreError("Stale", `session ${target.adoptId} cannot be adopted`);
          session = found;
        }
        const b = await insertBinding(this.db, s, binding, session.id, new Date());
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
    const binding = await this.findBinding(key);
    if (!binding) return null;
    const session = await this.find(binding.sessionId);
    return session ? { binding, session } : null;
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
    return this.db.sqlTransaction("rotate", (s) => rotateIn(this.db, s, input));
  }

  /**
   * The session the conversation was bound to when this inbound event
   * arrived, if a rotation has moved the binding since (see RotateInput.stampInbound).
   */
  async arrivalOf(inboundId: string): Promise<string | null> {
    const [r] = await this.db.query("inbound-arrival", this.db.q.selectFrom("InboundEvent").select("arrivalSessionId").where("id", "=", inboundId));
    return r?.arrivalSessionId ?? null;
  }

  /** Whether anything was said in the session yet (a transcript entry exists). */
  async hasMessages(id: string): Promise<boolean> {
    const rows = await this.db.query(
      "session-has-messages",
      this.db.q
        .selectFrom("Message")
        .select((eb) => eb.lit(1).as("one"))
        .where("sessionId", "=", id)
        .limit(1),
    );
    return rows.length > 0;
  }

  /** Points an existing binding at another session of the same conversation (for /resume). */
  repoint(key: string, expectedSessionId: string, targetId: string): Promise<BindingRecord> {
    const b = this.db.q;
    return this.db.sqlTransaction("repoint", async (q) => {
      const now = new Date();
      const moved = await q.run(
        b
          .updateTable("Binding")
          .set((eb) => ({ sessionId: targetId, version: eb("version", "+", 1), updatedAt: now }))
          .where("key", "=", key)
          .where("sessionId", "=", expectedSessionId),
      );
      if (moved !== 1) throw new StoreError("Stale", `binding ${key} no longer points at ${expectedSessionId}`);
      await q.run(b.updateTable("Session").set({ archived: false, archivedAt: null, endReason: null, lastActive: now }).where("id", "=", targetId));
      await q.run(
        b
          .updateTable("Session")
          .set({ archived: true, archivedAt: now, endReason: "resume" })
          .where("id", "=", expectedSessionId)
          .where("archived", "=", false),
      );
      const [binding] = await q.all(b.selectFrom("Binding").selectAll().where("key", "=", key));
      return binding!;
    });
  }
}

async function rotateIn(db: Dialect, s: Sql, input: RotateInput): Promise<RotateResult> {
  const q = db.q;
  const now = new Date();
  const key = input.binding.key;
  const current = await insertSession(db, s, input.successor);
  const existing = await bindingIn(db, s, key);
  if (!existing) {
    if (input.expectedSessionId) throw new StoreError("Stale", `binding ${key} does not exist yet`);
    const binding = await insertBinding(db, s, input.binding, current.id, now);
    return { previous: null, current, binding };
  }
  const expected = input.expectedSessionId ?? existing.sessionId;
  const moved = await s.run(
    q
      .updateTable("Binding")
      .set((eb) => ({ sessionId: current.id, version: eb("version", "+", 1), updatedAt: now }))
      .where("key", "=", key)
      .where("sessionId", "=", expected),
  );
  if (moved !== 1) throw new StoreError("Stale", `binding ${key} no longer points at ${expected}`);
  await s.run(
    q
      .updateTable("Session")
      .set({ archived: true, archivedAt: now, endReason: input.reason ?? "rotate" })
      .where("id", "=", expected)
      .where("archived", "=", false),
  );
  if (input.stampInbound) {
    // Committed with the move: an event recorded before it arrived under `expected`; one recorded after finds no stamp and the binding as it is.
    await s.run(
      q
        .updateTable("InboundEvent")
        .set({ arrivalSessionId: expected })
        .where("conversation", "=", (eb) => eb.selectFrom("InboundEvent").select("conversation").where("id", "=", input.stampInbound!))
        .where("status", "=", "received")
        .where("arrivalSessionId", "is", null)
        .where("id", "<>", input.stampInbound),
    );
  }
  const previous = await sessionIn(db, s, expected);
  const binding = (await bindingIn(db, s, key))!;
  return { previous, current, binding };
}
