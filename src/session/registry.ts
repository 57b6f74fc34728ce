import type { SessionStore, NewBinding } from "../store/sessions.js";
import { StoreError } from "../store/errors.js";
import { chatBinding, mainBinding, type ChatRequest } from "./binding-key.js";
import { isPrivateChannel } from "./channel.js";
import { errors, isSessionError } from "./errors.js";
import { INTERNAL_KINDS, fromRecord, newInfo, record, type Info, type Kind } from "./info.js";
import {
  currentOf,
  infoById,
  rotateBinding,
  safeInfo,
  successorRecord,
  switchBinding,
  verifyRotation,
  type RotateRequest,
  type Rotation,
  type RotationVerdict,
} from "./rotation.js";
import type { EnsureRequest, ListOptions, MainRequest, MainRotateRequest, ReviewItem, ReviewRequest, Scope } from "./requests.js";

const DEFAULT_REVIEW_EXCLUDED: Kind[] = ["delegate", "task", "scheduler"];

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
    const info = await infoById(this.store, id);
    if (info.userId !== scope.userId || info.agentId !== scope.agentId) throw errors.forbidden(`Session ${id}`, { sessionId: id });
    return info;
  }

  /** A session by id with no scope check, for operators (CLI, console) only. */
  getUnscoped(id: string): Promise<Info> {
    return infoById(this.store, id);
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

  async #resolve(b: NewBinding, legacy: Info | undefined, extra: { persona?: string } = {}): Promise<Info> {
    const current = await currentOf(this.store, b.key);
    if (current && !current.archived) return current;
    if (current) {
      // The bound session was archived out of band: keep the invariant by rotating it.
      try {
        return (await rotateBinding(this.store, b, current.id, { reason: "repair" })).current;
      } catch (e) {
        if (isSessionError(e, "StaleRotation")) return this.#resolve(b, undefined, extra);
        throw e;
      }
    }
    const target = legacy ? { adoptId: legacy.id } : { session: successorRecord(b, undefined, extra) };
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

  /**
   * Archives the conversation's session and starts its successor (parentId =
   * the old one) in one transaction. With expectedSessionId it is
   * compare-and-rotate: StaleRotation, and nothing changes, if the binding has
   * moved on. A lost commit acknowledgement gives RotationOutcomeUnknown.
   */
  rotateChannel(req: RotateRequest): Promise<Rotation> {
    return rotateBinding(this.store, chatBinding(req), req.expectedSessionId, { ...req, agentId: req.successorAgentId });
  }

  /** The user's main session: the bound one, else the most recent candidate promoted, else a new one if asked. */
  async resolveMain(req: MainRequest): Promise<Info> {
    const b = mainBinding(req);
    const current = await currentOf(this.store, b.key);
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
    return rotateBinding(this.store, mainBinding(req), req.expectedSessionId, { persona: req.persona, reason: "new" });
  }

  /** After RotationOutcomeUnknown: whether the rotation away from `expectedSessionId` happened (see rotation.ts). */
  verifyRotation(expectedSessionId: string, resolve: () => Promise<Pick<Info, "id"> | null | undefined>): Promise<RotationVerdict> {
    return verifyRotation(expectedSessionId, resolve);
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
    return rotateBinding(this.store, binding, sessionId, { reason: "rotate" });
  }

  /** The session a conversation's binding points at now, without creating anything. */
  async peekChatChannel(req: ChatRequest): Promise<Info | undefined> {
    return currentOf(this.store, chatBinding(req).key);
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
  switchChannel(req: ChatRequest & { targetId: string; expectedSessionId: string }): Promise<Rotation> {
    return switchBinding(this.store, req);
  }
}
