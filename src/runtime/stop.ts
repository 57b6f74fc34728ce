import { SwitchboardError } from "../errors.js";
import type { LiveSession, WindowMessage } from "./live-session.js";
import type { Pending } from "./turn.js";
import type { TurnQueue } from "./turn-queue.js";

/**
 * The abort reason of a turn cut by /stop. Unlike a /new or a switch (the
 * conversation moved on), the chat stays where it was and has seen the
 * question and the partial answer, so the turn keeps them (stoppedEntries).
 */
export class TurnStopped extends SwitchboardError<"Stopped"> {
  override readonly name = "TurnStopped";
  constructor() {
    super("Stopped", "the turn was stopped with /stop");
  }
}

/** The `meta` of an answer cut by /stop, so a reader of the transcript (the console, `sessions show`) can mark it. */
export const STOPPED_META = JSON.stringify({ stopped: true });

/** Whether an entry's `meta` marks an answer cut by /stop (unreadable JSON is not). */
export function stoppedFromMeta(meta: string | null | undefined): boolean {
  if (!meta) return false;
  try {
    return (JSON.parse(meta) as { stopped?: unknown }).stopped === true;
  } catch {
    return false;
  }
}

/**
 * What a turn cut by /stop leaves in the transcript: the question, the tool
 * rounds it ran, and the text it had streamed (what the chat's draft showed),
 * marked stopped. It completes no turn.
 */
export function stoppedEntries<U extends WindowMessage>(question: U, toolRounds: WindowMessage[], text: string): Array<U | WindowMessage> {
  return [question, ...toolRounds, ...(text.length ? [{ role: "assistant" as const, content: text, meta: STOPPED_META }] : [])];
}

/**
 * /stop: aborts the running turn and drops the queued messages (`drop`
 * commits each as handled, so a restart does not replay them). Returns
 * whether a turn was running and how many messages were dropped.
 */
export function stopTurns(session: LiveSession, q: TurnQueue, drop: (p: Pending) => void): { running: boolean; dropped: number } {
  const running = !!q.running;
  const dropped = q.takeWaiting();
  q.abortRunning(session, new TurnStopped());
  for (const p of dropped) drop(p);
  session.emit({ kind: "lifecycle", sessionId: session.id, phase: "stopped", detail: { dropped: dropped.length } });
  return { running, dropped: dropped.length };
}
