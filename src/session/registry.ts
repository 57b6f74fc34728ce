import { randomUUID } from "node:crypto";
import type { SessionStore, NewBinding, SessionRecord } from "../store/sessions.js";
import { StoreError } from "../store/errors.js";
import { chatBinding, mainBinding } from "./binding-key.js";
import { isPrivateChannel } from "./channel.js";
import { errors, isSessionError } from "./errors.js";
import { INTERNAL_KINDS, fromRecord, isUuid, record, type Info, type Kind, type SessionEndReason } from "./info.js";

/** Who is asking: a user (or a group, for a group session) talking to an agent. */
export interface Scope {
  userId: string;
  agentId: string;
}

export interface EnsureRequest {
  id?: string;
  agentId: string;
  userId: string;
  groupId?: string;
  channel: string;
  kind: Kind;
  /** An existing session must be of this kind, or the result is WrongKind. */
  requireKind?: Kind;
  /** A missing exact id may be created with that id. */
  allowExactIdCreate?: boolean;
  /** With no id, create a session with a fresh id. */
  createIfMissing?: boolean;
  projectId?: string;
  title?: string;
  parentId?: string;
  persona?: string;
}

export interface ListOptions {
  kinds?: Kind[];
  includeArchived?: boolean;
  /** Hide task and delegate sessions. */
  excludeInternal?: boolean;
  projectId?: string;
  channel?: string;
  limit?: number;
  offset?: number;
}

export interface ReviewRequest {
  agentId?: string;
  /** Kinds to review. Default: every kind but delegate, task and scheduler. */
  kinds?: Kind[];
  /** Keep only sessions on private user channels. */
  requirePrivateMain?: boolean;
  activeSince?: Date;
  limit?: number;
}

/** A conversation: a private chat (user + channel) or a group (userId === groupId). */
export interface ChatRequest {
  agentId: string;
  userId: string;
  groupId?: string;
  channel: string;
  /** A session id from before bindings existed; adopted on a miss if still valid for this conversation. */
  legacyId?: string;
}

export interface RotateRequest extends ChatRequest {
  /** Compare-and-rotate: rotate only if the binding still points here. */
  expectedSessionId?: string;
  persona?: string;
  title?: string;
  /** Recorded on the session that ends. Default "rotate". */
  reason?: SessionEndReason;
  /**
   * The inbound event that asked for this rotation (a `/new`). It compares
   * against the session the conversation was bound to when that event
   * arrived: of several `/new` recorded before the first of them is handled,
   * only the first rotates, unless something was said in the fresh session
   * in between (then the fresh session is the one rotated).
   */
  inboundId?: string;
}

export interface MainRequest {
  agentId: string;
  userId: string;
  channel: string;
  createIfMissing?: boolean;
}

export interface MainRotateRequest extends MainRequest {
  expectedSessionId?: string;
  persona?: string;
}

export interface Rotation {
  previous?: Info;
  current: Info;
}

export type RotationVerdict = "Committed" | "NotExecuted" | "Uncertain";

export type ReviewItem = Info & { latestSeq: number };

const DEFAULT_REVIEW_EXCLUDED: Kind[] = ["delegate", "task", "scheduler"];

function newInfo(base: Omit<Info, "id" | "metadata" | "turnCount" | "createdAt" | "lastActive" | "archived"> & Partial<Info>): Info {
  const now = new Date();
  return {
    metadata: {},
    turnCount: 0,
    createdAt: now,
    lastActive: now,
    archived: false,
    ...base,
    id: base.id ?? randomUUID(),
  };
}

/**
 * The session registry: every operation on sessions and bindings, with the
 * domain's rules. Storage is behind SessionStore; this class adds validation,
 * scope checks and error mapping.
 */
export class Registry {
  constructor(readonly store: SessionStore) {}

  // ---- sessions -----------------------------------------------------------

  async ensure(req: EnsureRequest): Promise<Info> {
    if (req.id !== undefined) {
      const found = await this.store.find(req.id);
      if (found) {
        const info = fromRecord(found);
        if (req.requireKind && info.kind !== req.requireKind) throw errors.wrongKind(info.id, info.kind, req.requireKind);
        if (info.userId !== req.userId || info.agentId !== req.agentId) throw errors.forbidden(`Session ${info.id}`, { sessionId: info.id });
        return info;
      }
      if (!req.allowExactIdCreate) throw errors.notFound(`Session ${req.id}`, { sessionId: req.id });
      return this.#create({ ...req, id: req.id });
    }
    if (!req.createIfMissing) throw errors.notFound("A session (no id was given and createIfMissing is off)");
    return this.#create(req);
  }

  async #create(req: EnsureRequest): Promise<Info> {
    const info = newInfo({
      id: req.id,
      agentId: req.agentId,
      userId: req.userId,
      groupId: req.groupId,
      channel: req.channel,
      kind: req.kind,
      projectId: req.projectId,
      title: req.title,
      parentId: req.parentId,
      persona: req.persona,
    });
    try {
      return fromRecord(await this.store.insert(record(info)));
    } catch (e) {
      if (e instanceof StoreError && e.code === "Conflict") throw errors.alreadyExists(`Session ${info.id}`, { sessionId: info.id });
      throw e;
    }
  }

  /** A session the scope owns. NotFound if it does not exist, Forbidden if it belongs to someone else. */
  async get(scope: Scope, id: string): Promise<Info> {
    const found = await this.store.find(id);
    if (!found) throw errors.notFound(`Session ${id}`, { sessionId: id });
    const info = fromRecord(found);
    if (info.userId !== scope.userId || info.agentId !== scope.agentId) throw errors.forbidden(`Session ${id}`, { sessionId: id });
    return info;
  }

  /** A session by id with no scope check, for operators (CLI, console) only. */
  async getUnscoped(id: string): Promise<Info> {
    const found = await this.store.find(id);
    if (!found) throw errors.notFound(`Session ${id}`, { sessionId: id });
    return fromRecord(found);
  }

  list(scope: Scope, opts: ListOptions = {}): Promise<Info[]> {
    return this.#list({ ...opts, userId: scope.userId, agentId: scope.agentId });
  }

  /** Every session, for operators (CLI, console) only. */
  listAll(opts: ListOptions & { userId?: string; agentId?: string } = {}): Promise<Info[]> {
    return this.#list(opts);
  }

  async #list(opts: ListOptions & { userId?: string; agentId?: string }): Promise<Info[]> {
    const rows = await this.store.list({
      userId: opts.userId,
      agentId: opts.agentId,
      kinds: opts.kinds,
      excludeKinds: opts.excludeInternal ? [...INTERNAL_KINDS] : undefined,
      includeArchived: opts.includeArchived,
      projectId: opts.projectId,
      channel: opts.channel,
      limit: opts.limit,
      offset: opts.offset,
    });
    return rows.map(fromRecord);
  }

  async archive(scope: Scope, id: string): Promise<Info> {
    await this.get(scope, id);
    const rec = await this.store.archive(id, "archive");
    if (!rec) throw errors.notFound(`Session ${id}`, { sessionId: id });
    return fromRecord(rec);
  }

  async listForReview(req: ReviewRequest = {}): Promise<ReviewItem[]> {
    const rows = await this.store.listForReview({
      agentId: req.agentId,
      kinds: req.kinds,
      excludeKinds: req.kinds ? undefined : DEFAULT_REVIEW_EXCLUDED,
      privateOnly: req.requirePrivateMain,
      activeSince: req.activeSince,
      limit: req.limit,
    });
    return rows
      .map((r) => ({ ...fromRecord(r), latestSeq: r.latestSeq }))
      .filter((r) => !req.requirePrivateMain || (r.groupId === undefined && isPrivateChannel(r.channel)));
  }

  /** Writes to an active session. Archived sessions are read-only: Archived. */
  async update(
    id: string,
    patch: { title?: string; persona?: string; metadata?: Record<string, unknown>; projectId?: string; lastActive?: Date; turnIncrement?: number },
  ): Promise<void> {
    const outcome = await this.store.update(id, {
      ...(patch.title !== undefined ? { title: patch.title } : {}),
      ...(patch.persona !== undefined ? { persona: patch.persona } : {}),
      ...(patch.metadata !== undefined ? { metadata: JSON.stringify(patch.metadata) } : {}),
      ...(patch.projectId !== undefined ? { projectId: patch.projectId } : {}),
      ...(patch.lastActive !== undefined ? { lastActive: patch.lastActive } : {}),
      ...(patch.turnIncrement ? { turnIncrement: patch.turnIncrement } : {}),
    });
    if (outcome === "archived") throw errors.archived(id);
    if (outcome === "missing") throw errors.notFound(`Session ${id}`, { sessionId: id });
  }

  /**
   * Sets single metadata keys (undefined removes one), merged into the stored
   * object by the database: a key another process set meanwhile is kept.
   */
  async setMetadata(id: string, patch: Record<string, unknown>): Promise<void> {
    const outcome = await this.store.mergeMetadata(id, patch);
    if (outcome === "archived") throw errors.archived(id);
    if (outcome === "missing") throw errors.notFound(`Session ${id}`, { sessionId: id });
  }

  // ---- bindings -----------------------------------------------------------

  #successor(b: NewBinding, prev: Info | undefined, extra: { persona?: string; title?: string }): SessionRecord {
    return record(
      newInfo({
        agentId: b.agentId,
        userId: b.userId,
        groupId: b.groupId ?? undefined,
        channel: b.channel,
        kind: b.kind as Kind,
        parentId: prev?.id,
        projectId: prev?.projectId,
        // A fresh conversation keeps the chat's chosen model settings and persona.
        persona: extra.persona ?? prev?.persona,
        title: extra.title,
        metadata: prev ? { ...prev.metadata } : {},
      }),
    );
  }

  /** The current session of the binding, if any, as Info. */
  async #current(key: string): Promise<Info | undefined> {
    const cur = await this.store.current(key);
    return cur ? fromRecord(cur.session) : undefined;
  }

  async #resolve(b: NewBinding, legacy: Info | undefined, extra: { persona?: string } = {}): Promise<Info> {
    const current = await this.#current(b.key);
    if (current && !current.archived) return current;
    if (current) {
      // The bound session was archived out of band: keep the invariant by rotating it.
      try {
        return (await this.#rotate(b, current.id, { reason: "repair" })).current;
      } catch (e) {
        if (isSessionError(e, "StaleRotation")) return this.#resolve(b, undefined, extra);
        throw e;
      }
    }
    const target = legacy ? { adoptId: legacy.id } : { session: this.#successor(b, undefined, extra) };
    try {
      return fromRecord((await this.store.bind(b, target)).session);
    } catch (e) {
      if (e instanceof StoreError && e.code === "Stale") return this.#resolve(b, undefined, extra);
      throw e;
    }
  }

  /**
   * The conversation's current session, created on first use. A private chat
   * binds on user + agent + kind chat + channel; a group on group + agent +
   * kind chat. On a miss, a still-valid legacy session for this exact
   * conversation is adopted rather than superseded.
   */
  async resolveChatChannel(req: ChatRequest): Promise<Info> {
    const b = chatBinding(req);
    let legacy: Info | undefined;
    if (req.legacyId) {
      const rec = await this.store.find(req.legacyId);
      const info = rec ? safeInfo(rec) : undefined;
      if (
        info &&
        !info.archived &&
        info.kind === "chat" &&
        info.agentId === b.agentId &&
        info.userId === b.userId &&
        (info.groupId ?? null) === b.groupId &&
        (b.groupId !== null || info.channel === b.channel) &&
        (await this.store.bindingsForSession(info.id)).length === 0
      ) {
        legacy = info;
      }
    }
    return this.#resolve(b, legacy);
  }

  async #rotate(
    b: NewBinding,
    expectedSessionId: string | undefined,
    extra: { persona?: string; title?: string; reason?: SessionEndReason; inboundId?: string },
  ): Promise<Rotation> {
    let prev: Info | undefined;
    // Read outside the transaction, which is safe: a stamp written after this read comes with a moved binding, and the compare below fails.
    let arrival = extra.inboundId ? await this.store.arrivalOf(extra.inboundId) : null;
    const cur = await this.#current(b.key);
    // Moved since this request arrived, but the new session already holds what was said after that
    // rotation (messages sent between two /new): this /new is not a repeat of the other one.
    if (arrival && cur && cur.id !== arrival && (await this.store.hasMessages(cur.id))) arrival = null;
    // A chat's /new that reaches a successor holding nothing yet, with no stamp (it was recorded just
    // after another /new of the same burst rotated: concurrent webhooks), repeats that rotation: the
    // session is already fresh. A persona asked for still rotates, onto that persona.
    if (!arrival && extra.inboundId && !extra.persona && cur?.parentId && !(await this.store.hasMessages(cur.id))) {
      throw errors.stale(cur.parentId, { currentSessionId: cur.id });
    }
    let expected = arrival ?? expectedSessionId;
    if (cur) {
      prev = cur;
      expected ??= cur.id;
    }
    if (expected && cur && cur.id !== expected) throw errors.stale(expected, { currentSessionId: cur.id });
    const successor = this.#successor(b, prev, extra);
    try {
      const r = await this.store.rotate({
        binding: b,
        expectedSessionId: expected,
        successor,
        reason: extra.reason ?? "rotate",
        stampInbound: extra.inboundId,
      });
      return { previous: r.previous ? fromRecord(r.previous) : undefined, current: fromRecord(r.current) };
    } catch (e) {
      if (e instanceof StoreError && e.code === "Stale") throw errors.stale(expected ?? "(none)");
      if (e instanceof StoreError && e.code === "CommitUnknown") throw errors.unknownOutcome(expected, e);
      throw e;
    }
  }

  /**
   * Archives the conversation's session and starts its successor (parentId =
   * the old one) in one transaction. With expectedSessionId it is
   * compare-and-rotate: StaleRotation, and nothing changes, if the binding has
   * moved on. A lost commit acknowledgement gives RotationOutcomeUnknown.
   */
  rotateChannel(req: RotateRequest): Promise<Rotation> {
    return this.#rotate(chatBinding(req), req.expectedSessionId, { persona: req.persona, title: req.title, reason: req.reason, inboundId: req.inboundId });
  }

  /** The user's main session: the bound one, else the most recent candidate promoted, else a new one if asked. */
  async resolveMain(req: MainRequest): Promise<Info> {
    const b = mainBinding(req);
    const current = await this.#current(b.key);
    if (current && !current.archived) return current;
    const [candidate] = await this.list({ userId: req.userId, agentId: req.agentId }, { kinds: ["main"], limit: 1 });
    if (candidate) {
      try {
        return fromRecord((await this.store.bind(b, { adoptId: candidate.id })).session);
      } catch (e) {
        if (!(e instanceof StoreError && e.code === "Stale")) throw e;
      }
    }
    if (current || req.createIfMissing) return this.#resolve(b, undefined);
    throw errors.notFound(`A main session for user ${req.userId} and agent ${req.agentId}`, { userId: req.userId, agentId: req.agentId });
  }

  /** Rotates the main session. With no main session yet, this simply creates one. */
  rotateMain(req: MainRotateRequest): Promise<Rotation> {
    return this.#rotate(mainBinding(req), req.expectedSessionId, { persona: req.persona, reason: "new" });
  }

  /**
   * After RotationOutcomeUnknown: re-reads the binding through `resolve`.
   * Committed if it moved off the expected session, NotExecuted if it still
   * points there, Uncertain if the read failed or named no session.
   */
  async verifyRotation(expectedSessionId: string, resolve: () => Promise<Pick<Info, "id"> | null | undefined>): Promise<RotationVerdict> {
    let seen: Pick<Info, "id"> | null | undefined;
    try {
      seen = await resolve();
    } catch {
      return "Uncertain";
    }
    if (!seen || typeof seen.id !== "string" || seen.id.length === 0) return "Uncertain";
    return seen.id === expectedSessionId ? "NotExecuted" : "Committed";
  }

  /**
   * Rotates whichever binding points at `sessionId` (operator `sessions
   * rotate`): compare-and-rotate against that session.
   */
  async rotateBound(sessionId: string): Promise<Rotation> {
    const bindings = await this.store.bindingsForSession(sessionId);
    const b = bindings[0];
    if (!b) throw errors.notFound(`A binding that points at session ${sessionId} (it is not any conversation's current session)`, { sessionId });
    const { sessionId: _s, version: _v, createdAt: _c, updatedAt: _u, ...binding } = b;
    return this.#rotate(binding, sessionId, { reason: "rotate" });
  }

  /** The session a conversation's binding points at now, without creating anything. */
  async peekChatChannel(req: ChatRequest): Promise<Info | undefined> {
    return this.#current(chatBinding(req).key);
  }

  /** The binding key of a conversation (for locks and caches above this layer). */
  bindingKey(req: ChatRequest): string {
    return chatBinding(req).key;
  }

  /**
   * Points the conversation at an earlier session of the same conversation
   * (for /resume). Another conversation's session, and an id that does not
   * exist, give the same NotFound ("not found in this chat").
   */
  async switchChannel(req: ChatRequest & { targetId: string; expectedSessionId: string }): Promise<Rotation> {
    const b = chatBinding(req);
    // Another chat's session and one that does not exist get the same answer: the reply tells nothing about other chats.
    const rec = isUuid(req.targetId) ? await this.store.find(req.targetId) : null;
    const target = rec ? safeInfo(rec) : undefined;
    if (
      !target ||
      target.userId !== b.userId ||
      target.agentId !== b.agentId ||
      target.kind !== "chat" ||
      (target.groupId ?? null) !== b.groupId ||
      (b.groupId === null && target.channel !== b.channel)
    ) {
      throw errors.notInChat(req.targetId);
    }
    if (target.id === req.expectedSessionId) return { previous: target, current: target };
    try {
      await this.store.repoint(b.key, req.expectedSessionId, target.id);
    } catch (e) {
      if (e instanceof StoreError && e.code === "Stale") throw errors.stale(req.expectedSessionId);
      throw e;
    }
    const previous = await this.getUnscoped(req.expectedSessionId);
    return { previous, current: await this.getUnscoped(target.id) };
  }
}

function safeInfo(rec: SessionRecord): Info | undefined {
  try {
    return fromRecord(rec);
  } catch {
    return undefined;
  }
}
