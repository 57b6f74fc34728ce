import type { Info } from "../session/info.js";
import type { Registry } from "../session/registry.js";
import type { Conversation } from "./events.js";
import type { LiveSession } from "./live-session.js";
import type { SessionPool } from "./session-pool.js";
import type { TurnQueue, TurnQueues } from "./turn-queue.js";

export interface HandoffContext {
  pool: SessionPool;
  queues: TurnQueues;
  open(info: Info): LiveSession;
  pump(session: LiveSession, q: TurnQueue): void;
}

/**
 * Moves a conversation from `from` to the session `to` (after /new or
 * /resume): fences and retires `from`, and hands its queued messages over.
 */
export function handoff(ctx: HandoffContext, from: LiveSession, to: Info, phase: "rotated" | "switched"): LiveSession {
  ctx.pool.unretire(to.id);
  const next = ctx.open(to);
  const q = ctx.queues.of(from.id);
  const moved = q.takeWaiting();
  q.abortRunning(from);
  from.successorId = next.id;
  ctx.pool.retire(from.id, next.id);
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
