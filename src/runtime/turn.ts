import { randomUUID } from "node:crypto";
import type { MessageEvent } from "./events.js";
import type { LiveSession } from "./live-session.js";
import { SwitchboardError } from "../errors.js";
import { inSpan, recordSpan } from "../telemetry/index.js";
import { renderUserText } from "./pending.js";
import type { Runner } from "./runner.js";
import { TurnClock } from "./turn/clock.js";
import { commitAnswer, endFenced } from "./turn/commit.js";
import { failedRounds, runRounds } from "./turn/rounds.js";
import { turnComplete, turnScope, type TurnWork } from "./turn/scope.js";

/** "unanswered": the turn could not be committed before its event's TTL (the gateway tells the chat). */
export type TurnOutcome = "answered" | "failed" | "aborted" | "fenced" | "dropped" | "consumed" | "context" | "unanswered" | "abandoned";

/**
 * The abort reason of a turn stopped because the process is shutting down.
 * Such a turn commits nothing: its event stays unhandled and is replayed at
 * the next start. (Fencing, by contrast, is for /stop, /new and switches,
 * which do mark the event handled.)
 */
export class TurnAbandoned extends SwitchboardError<"Abandoned"> {
  override readonly name = "TurnAbandoned";
  constructor() {
    super("Abandoned", "the gateway is shutting down; the event is replayed at the next start");
  }
}

export interface Pending {
  event: MessageEvent;
  inboundIds: string[];
  /** The platform message the user's entry comes from (see sourceIdOf); none once several are merged. */
  sourceId?: string;
  done: Promise<TurnOutcome>;
  resolve(o: TurnOutcome): void;
}

const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_TYPING_MS = 4_000;
const DEFAULT_TYPING_DELAY_MS = 500;

/**
 * Runs one agent turn for a pending message: its input prepared and the
 * model's rounds run (turn/rounds.ts) under the turn's clock (turn/clock.ts),
 * then its exchange committed and its replies sent (turn/commit.ts). The run
 * is fenced by the session generation captured at its start: once the
 * session is rotated, stopped or switched, nothing more it produces is
 * emitted, and it commits nothing but the inbound record's handled state.
 */
export function executeTurn(runner: Runner, session: LiveSession, p: Pending, generation: number, abort: AbortController): Promise<TurnOutcome> {
  // The message's trace (src/telemetry) goes on here, however long it waited in the queue; one without (a replay) starts its own.
  const parent = p.event.trace;
  const attributes = { "switchboard.session.id": session.id, "switchboard.turn.messages": p.inboundIds.length };
  if (parent?.queuedAt !== undefined) recordSpan("queue wait", parent.queuedAt, { parent, attributes });
  return inSpan("turn", parent ? { parent, attributes } : { root: true, attributes }, async (span) => {
    const outcome = await runTurn(runner, session, p, generation, abort);
    span.setAttribute("switchboard.turn.outcome", outcome);
    return outcome;
  });
}

async function runTurn(runner: Runner, session: LiveSession, p: Pending, generation: number, abort: AbortController): Promise<TurnOutcome> {
  const { opts } = runner;
  const t = turnScope(runner, session, p, randomUUID(), generation);
  const clock = new TurnClock(abort, opts.turnTimeoutMs ?? DEFAULT_TIMEOUT_MS, {
    show: () => t.emit({ kind: "typing", sessionId: session.id, replyTo: p.event.replyTo }),
    delayMs: opts.typingDelayMs ?? DEFAULT_TYPING_DELAY_MS,
    intervalMs: opts.typingIntervalMs ?? DEFAULT_TYPING_MS,
  });
  const work: TurnWork = { userText: renderUserText(p.event), nothingToAnswer: false, text: "", toolRounds: [], notices: [] };
  let outcome: TurnOutcome = "answered";
  try {
    await runRounds(t, work, abort.signal, clock);
  } catch (err) {
    outcome = abort.signal.reason instanceof TurnAbandoned ? "abandoned" : failedRounds(t, work, err, clock);
  } finally {
    clock.stop();
  }
  // Shutting down: nothing of this turn is committed, so the event is not marked handled and the
  // next start answers it. (Before, a shutdown fenced the turn, which recorded the event as handled
  // with no answer: a message lost.)
  if (abort.signal.reason instanceof TurnAbandoned) {
    // Shutting down: the usage of calls that finished is still written before the store closes.
    await work.settled;
    session.emit(turnComplete(t, "abandoned"));
    return "abandoned";
  }
  if (outcome === "unanswered") {
    await work.settled;
    t.emit(turnComplete(t, "failed"));
    return outcome;
  }
  if (!t.live()) outcome = outcome === "failed" ? "failed" : "fenced";
  if (outcome === "fenced") return endFenced(t, work, abort.signal);
  return commitAnswer(t, work, outcome);
}
