import type { ChatMessage } from "../../agent/types.js";
import type { OutEvent, OutEventOf, Severity } from "../events.js";
import type { LiveSession, WindowMessage } from "../live-session.js";
import type { Runner } from "../runner.js";
import type { Pending } from "../turn.js";

/** One turn as its steps see it: who runs it, for which message, and whether it is still the session's current run. */
export interface TurnScope {
  runner: Runner;
  session: LiveSession;
  pending: Pending;
  turnId: string;
  /** False once the session was rotated, stopped or switched after the turn started (its generation moved on). */
  live(): boolean;
  /** Emits, unless the turn is fenced: nothing a fenced run produces is delivered. */
  emit(e: OutEvent): void;
}

/** What the turn produced so far; the model rounds fill it as they stream, and a failure keeps what was streamed. */
export interface TurnWork {
  userText: string;
  images?: ChatMessage["images"];
  /** The attachments left nothing to answer (an oversize image alone): only their notices are sent. */
  nothingToAnswer: boolean;
  text: string;
  /** Set when the agent stopped at TOOL_MAX_ROUNDS: how many rounds it used. */
  toolLimit?: number;
  toolRounds: WindowMessage[];
  notices: Array<{ severity: Severity; text: string }>;
  /** The model calls' usage settlements still being written (the agent's `done`): the answer goes out after them. Never rejects. */
  settled?: Promise<void>;
}

export function turnScope(runner: Runner, session: LiveSession, pending: Pending, turnId: string, generation: number): TurnScope {
  const live = () => session.generation === generation;
  return {
    runner,
    session,
    pending,
    turnId,
    live,
    emit: (e) => {
      if (live()) session.emit(e);
    },
  };
}

/** The turn's end as the event every tracker of it (a streamed draft, the latency metric) waits for. */
export function turnComplete(t: TurnScope, outcome: OutEventOf<"turn-complete">["outcome"]): OutEventOf<"turn-complete"> {
  const ev = t.pending.event;
  return {
    kind: "turn-complete",
    sessionId: t.session.id,
    turnId: t.turnId,
    replyTo: ev.replyTo,
    inboundId: ev.inboundId,
    inboundIds: t.pending.inboundIds,
    outcome,
  };
}
