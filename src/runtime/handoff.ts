import { chatKeyOf } from "../session/binding-key.js";
import type { Info } from "../session/info.js";
import type { Registry } from "../session/registry.js";
import type { CurrentSessions } from "./current-sessions.js";
import type { Conversation, MessageEvent } from "./events.js";
import type { LiveSession } from "./live-session.js";
import type { SessionPool } from "./session-pool.js";
import type { TurnQueue, TurnQueues } from "./turn-queue.js";

export interface HandoffContext {
  pool: SessionPool;
  queues: TurnQueues;
  /** Which session each conversation is on: the handoff moves `to`'s conversation there. */
  current: CurrentSessions;
  open(info: Info): LiveSession;
  pump(session: LiveSession, q: TurnQueue): void;
}

/**
 * Moves a conversation from `from` to the session `to` (after /new or
 * /resume): records the conversation on `to`, so what is still addressed to
 * `from` follows it there; fences and closes `from`, and hands its queued
 * messages over.
 */
export function handoff(ctx: HandoffContext, from: LiveSession, to: Info, phase: "rotated" | "switched"): LiveSession {
  const next = ctx.open(to);
  const key = chatKeyOf(to);
  if (key !== undefined) ctx.current.set(key, next.id);
  const q = ctx.queues.of(from.id);
  const moved = q.takeWaiting();
  q.abortRunning(from);
  const nq = ctx.queues.of(next.id);
  nq.queue.push(...moved);
  next.emit({ kind: "lifecycle", sessionId: next.id, phase, detail: { previousId: from.id } });
  ctx.pool.delete(from.id);
  const settled = q.running?.settled ?? Promise.resolve();
  void settled.then(() => {
    from.close();
    if (!q.running && q.queue.length === 0) ctx.queues.delete(from.id);
    ctx.pump(next, nq);
  });
  return next;
}

/** /resume: binds the conversation to the target session and hands over to it; `moved` is false when it was on it already. */
export async function resume(
  registry: Registry,
  move: (from: LiveSession, to: Info) => void,
  session: LiveSession,
  conversation: Conversation,
  targetSessionId: string,
): Promise<{ moved: boolean; session: Info }> {
  const r = await registry.switchChannel({ ...conversation, targetId: targetSessionId, expectedSessionId: session.id });
  if (r.current.id === session.id) return { moved: false, session: r.current };
  move(session, r.current);
  return { moved: true, session: r.current };
}

/** What finding where a conversation is needs: the one cache of current sessions, the registry (the truth), and opening sessions. */
export interface Whereabouts {
  current: CurrentSessions;
  registry: Registry;
  open(info: Info): LiveSession;
  openById(id: string): Promise<LiveSession>;
}

/**
 * The live session a message taken for `session` belongs to: the one the
 * conversation was handed to in this process (CurrentSessions), else, when
 * `session` is closed or archived, the one its binding names now.
 */
export async function sessionFor(w: Whereabouts, session: LiveSession, event: MessageEvent): Promise<LiveSession> {
  const key = w.registry.bindingKey(event.conversation);
  const known = w.current.get(key);
  if (known !== undefined && known !== session.id) return w.openById(known);
  if (!session.closed && !session.info.archived) return session;
  const bound = await w.registry.resolveChatChannel(event.conversation);
  w.current.set(key, bound.id);
  return w.open(bound);
}

/** Where replies go after the interceptors ran: one may have handed the conversation to another session. */
export async function followed(w: Whereabouts, session: LiveSession): Promise<LiveSession> {
  const key = chatKeyOf(session.info);
  const known = key === undefined ? undefined : w.current.get(key);
  return known !== undefined && known !== session.id ? w.openById(known) : session;
}
