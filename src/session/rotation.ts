/**
 * How a binding moves: rotated onto a fresh successor (/new, an operator's
 * rotate, a repair), or switched to an earlier session of its conversation
 * (/resume). The registry's operations call these with the binding they
 * resolved; the store does each move in one transaction.
 */

import type { NewBinding, SessionRecord, SessionStore } from "../store/sessions.js";
import { StoreError } from "../store/errors.js";
import { BINDING_AGENT_KEY, bindingAgentIdOf } from "./agent-id.js";
import { chatBinding, type ChatRequest } from "./binding-key.js";
import { errors } from "./errors.js";
import { fromRecord, isUuid, newInfo, record, type Info, type Kind, type SessionEndReason } from "./info.js";

export interface RotateRequest extends ChatRequest {
  /** The successor's agent id (see RotationExtra.agentId); the binding stays keyed by `agentId`. */
  successorAgentId?: string;
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

export interface Rotation {
  previous?: Info;
  current: Info;
}

export type RotationVerdict = "Committed" | "NotExecuted" | "Uncertain";

export interface RotationExtra {
  /**
   * The successor's agent id (`/agent <name>`, or the routed agent when the
   * session's is no longer allowed); default: the previous session's, so
   * `/new` keeps the agent a user chose.
   */
  agentId?: string;
  persona?: string;
  title?: string;
  reason?: SessionEndReason;
  inboundId?: string;
}

/**
 * The fresh session a binding rotates onto: it continues `prev` (parentId)
 * and keeps the chat's agent, model settings and persona. Onto another agent
 * (`/agent`), the model settings and persona are that agent's own, not the
 * previous agent's, and a session whose agent is not the binding's records
 * the binding's (BINDING_AGENT_KEY), so its binding can be found from it.
 */
export function successorRecord(b: NewBinding, prev: Info | undefined, extra: { agentId?: string; persona?: string; title?: string }): SessionRecord {
  const agentId = extra.agentId ?? prev?.agentId ?? b.agentId;
  const sameAgent = prev !== undefined && prev.agentId === agentId;
  const metadata: Record<string, unknown> = sameAgent ? { ...prev.metadata } : {};
  if (agentId === b.agentId) delete metadata[BINDING_AGENT_KEY];
  else metadata[BINDING_AGENT_KEY] = b.agentId;
  return record(
    newInfo({
      agentId,
      userId: b.userId,
      groupId: b.groupId ?? undefined,
      channel: b.channel,
      kind: b.kind as Kind,
      parentId: prev?.id,
      projectId: prev?.projectId,
      persona: extra.persona ?? (sameAgent ? prev.persona : undefined),
      title: extra.title,
      metadata,
    }),
  );
}

/** The current session of the binding, if any, as Info. */
export async function currentOf(store: SessionStore, key: string): Promise<Info | undefined> {
  const cur = await store.current(key);
  return cur ? fromRecord(cur.session) : undefined;
}

/** Compare-and-rotate `b` onto a fresh successor (see Registry.rotateChannel for the rules). */
export async function rotateBinding(store: SessionStore, b: NewBinding, expectedSessionId: string | undefined, extra: RotationExtra): Promise<Rotation> {
  let prev: Info | undefined;
  // Read outside the transaction, which is safe: a stamp written after this read comes with a moved binding, and the compare below fails.
  let arrival = extra.inboundId ? await store.arrivalOf(extra.inboundId) : null;
  const cur = await currentOf(store, b.key);
  // Moved since this request arrived, but the new session already holds what was said after that
  // rotation (messages sent between two /new): this /new is not a repeat of the other one.
  if (arrival && cur && cur.id !== arrival && (await store.hasMessages(cur.id))) arrival = null;
  // A chat's /new that reaches a successor holding nothing yet, with no stamp (it was recorded just
  // after another /new of the same burst rotated: concurrent webhooks), repeats that rotation: the
  // session is already fresh. A persona or an agent asked for still rotates, onto that persona or agent.
  if (!arrival && extra.inboundId && !extra.persona && !extra.agentId && cur?.parentId && !(await store.hasMessages(cur.id))) {
    throw errors.stale(cur.parentId, { currentSessionId: cur.id });
  }
  let expected = arrival ?? expectedSessionId;
  if (cur) {
    prev = cur;
    expected ??= cur.id;
  }
  if (expected && cur && cur.id !== expected) throw errors.stale(expected, { currentSessionId: cur.id });
  try {
    const r = await store.rotate({
      binding: b,
      expectedSessionId: expected,
      successor: successorRecord(b, prev, extra),
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
 * After RotationOutcomeUnknown: re-reads the binding through `resolve`.
 * Committed if it moved off the expected session, NotExecuted if it still
 * points there, Uncertain if the read failed or named no session.
 */
export async function verifyRotation(expectedSessionId: string, resolve: () => Promise<Pick<Info, "id"> | null | undefined>): Promise<RotationVerdict> {
  let seen: Pick<Info, "id"> | null | undefined;
  try {
    seen = await resolve();
  } catch {
    return "Uncertain";
  }
  if (!seen || typeof seen.id !== "string" || seen.id.length === 0) return "Uncertain";
  return seen.id === expectedSessionId ? "NotExecuted" : "Committed";
}

/** Switches the conversation's binding to `targetId`, one of its own sessions (see Registry.switchChannel). */
export async function switchBinding(store: SessionStore, req: ChatRequest & { targetId: string; expectedSessionId: string }): Promise<Rotation> {
  const b = chatBinding(req);
  // Another chat's session and one that does not exist get the same answer: the reply tells nothing about other chats.
  const rec = isUuid(req.targetId) ? await store.find(req.targetId) : null;
  const target = rec ? safeInfo(rec) : undefined;
  if (
    !target ||
    target.userId !== b.userId ||
    bindingAgentIdOf(target) !== b.agentId ||
    target.kind !== "chat" ||
    (target.groupId ?? null) !== b.groupId ||
    (b.groupId === null && target.channel !== b.channel)
  ) {
    throw errors.notInChat(req.targetId);
  }
  if (target.id === req.expectedSessionId) return { previous: target, current: target };
  try {
    await store.repoint(b.key, req.expectedSessionId, target.id);
  } catch (e) {
    if (e instanceof StoreError && e.code === "Stale") throw errors.stale(req.expectedSessionId);
    throw e;
  }
  const previous = await infoById(store, req.expectedSessionId);
  return { previous, current: await infoById(store, target.id) };
}

/** A session by id, with no scope check. NotFound if it does not exist. */
export async function infoById(store: SessionStore, id: string): Promise<Info> {
  const found = await store.find(id);
  if (!found) throw errors.notFound(`Session ${id}`, { sessionId: id });
  return fromRecord(found);
}

/** A record as Info, or undefined when it is not a valid session (a corrupt row is nobody's). */
export function safeInfo(rec: SessionRecord): Info | undefined {
  try {
    return fromRecord(rec);
  } catch {
    return undefined;
  }
}
