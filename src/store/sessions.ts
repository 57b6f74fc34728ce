import type { Database } from "./db.js";
import { StoreError, isUniqueViolation } from "./errors.js";
import { sql, type Expression } from "kysely";
import { repointIn, rotateIn, type RotateInput, type RotateResult } from "./rotation.js";
import {
  BINDING_COLUMNS,
  FIND_BINDING,
  FIND_SESSION,
  INSERT_SESSION,
  INSERT_SESSION_AND_BINDING,
  insertBinding,
  insertSession,
  newBinding,
  row,
  sessionIn,
  type BindingRecord,
  type NewBinding,
  type SessionRecord,
} from "./session-rows.js";

export { bindingIdentity, type BindingRecord, type NewBinding, type SessionRecord } from "./session-rows.js";
export type { RotateInput, RotateResult } from "./rotation.js";

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
    return this.db.sqlTransaction("repoint", (s) => repointIn(this.db, s, key, expectedSessionId, targetId));
  }
}
