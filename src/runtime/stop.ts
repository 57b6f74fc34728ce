import type { Severity } from "./events.js";
import type { LiveSession } from "./live-session.js";
import type { Pending } from "./turn.js";
import type { TurnQueue } from "./turn-queue.js";

/**
 * /stop: aborts the running turn and drops the queued messages (`drop`
 * commits each as handled, so a restart does not replay them). Returns the
 * notice for the chat.
 */
export function stopTurns(session: LiveSession, q: TurnQueue, drop: (p: Pending) => void): Array<{ severity: Severity; text: string }> {
  const wasRunning = !!q.running;
  const dropped = q.takeWaiting();
  q.abortRunning(session);
  for (const p of dropped) drop(p);
  const text =
    wasRunning || dropped.length
      ? `Stopped.${dropped.length ? ` Dropped ${dropped.length} queued message${dropped.length === 1 ? "" : "s"}.` : ""}`
      : "Nothing to stop.";
  session.emit({ kind: "lifecycle", sessionId: session.id, phase: "stopped", detail: { dropped: dropped.length } });
  return [{ severity: "info", text }];
}
