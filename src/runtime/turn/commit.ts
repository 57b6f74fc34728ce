import { errInfo } from "../../log.js";
import { commitDurably } from "../durable-commit.js";
import type { CommitResult, Reply } from "../ledger.js";
import type { WindowMessage } from "../live-session.js";
import type { Severity } from "../events.js";
import { userEntry } from "../speaker.js";
import { TurnStopped, stoppedEntries } from "../stop.js";
import type { TurnOutcome } from "../turn.js";
import { turnComplete, type TurnScope, type TurnWork } from "./scope.js";

/**
 * A fenced turn: the conversation moved on (/new, a switch), so only that
 * the inbound was handled is recorded. A /stop keeps what the chat was
 * shown: the question and the partial answer, marked stopped.
 */
export async function endFenced(t: TurnScope, work: TurnWork, signal: AbortSignal): Promise<TurnOutcome> {
  const { session, pending: p } = t;
  const kept = signal.reason instanceof TurnStopped ? stoppedEntries(userEntry(p.event, work.userText, p.sourceId), work.toolRounds, work.text) : [];
  try {
    const r = await besideSettlements(
      commitDurably(t.runner, { sessionId: session.id, inboundIds: p.inboundIds, messages: kept, turnIncrement: 0, replies: [] }),
      work,
    );
    if (r === "unanswered") return "unanswered";
    if (r.transcript === "ok") session.remember(kept);
    // An earlier attempt landed unseen (its acknowledgement lost): the next turn reads what it wrote from the store.
    else if (r.transcript === "duplicate") session.invalidateWindow();
  } finally {
    // Past the fence, yet every turn ends: whoever tracks it (a streamed draft, the latency metric) lets go of it.
    session.emit(turnComplete(t, "fenced"));
  }
  return "fenced";
}

/** Commits the turn's exchange and its replies, then sends them: from the commit on they are durable. */
export async function commitAnswer(t: TurnScope, work: TurnWork, outcome: TurnOutcome): Promise<TurnOutcome> {
  const { session, pending: p } = t;
  const answered = outcome === "answered" && work.text.length > 0;
  // A turn counts when the agent answered or worked: tool rounds that ended without text (the round limit) are a turn the next one continues.
  const counted = answered || (outcome === "answered" && work.toolRounds.length > 0);
  if (outcome === "answered" && work.text.length === 0 && !work.nothingToAnswer) work.notices.push(emptyAnswerNotice(work.toolLimit));
  const committed: Array<WindowMessage & { meta?: string; sourceId?: string }> = [
    userEntry(p.event, work.userText, p.sourceId),
    ...work.toolRounds,
    ...(answered ? [{ role: "assistant" as const, content: work.text }] : []),
  ];
  const replyTo = p.event.replyTo;
  const replies: Reply[] = [
    ...(answered ? [{ replyTo, text: work.text, kind: "reply" as const }] : []),
    ...work.notices.map((n) => ({ replyTo, text: n.text, kind: "notice" as const, severity: n.severity })),
  ];
  const turnIncrement = counted ? 1 : 0;
  // The model calls' usage is written beside the turn's commit (on SQLite often in the same group commit), and
  // both are done before anything is sent: an answer the chat saw always has its usage recorded.
  const result = await besideSettlements(
    commitDurably(t.runner, { sessionId: session.id, inboundIds: p.inboundIds, messages: committed, turnIncrement, replies }),
    work,
  );
  const ended = outcome === "answered" ? "answered" : outcome === "aborted" ? "aborted" : "failed";
  // Unanswered, or an earlier attempt landed (its acknowledgement lost, its replies recorded and on their way):
  // nothing more to send from here, but the turn still ends, so what waits for its end is released.
  if (result === "unanswered" || result.transcript === "duplicate") {
    // The attempt that landed wrote the exchange, unseen here: the next turn reads the window from the store.
    if (result !== "unanswered") session.invalidateWindow();
    session.emit(turnComplete(t, result === "unanswered" ? "failed" : ended));
    return result === "unanswered" ? "unanswered" : outcome;
  }
  if (result.transcript === "ok") {
    session.remember(committed);
    if (counted) session.noteTurn(1);
  } else if (result.transcript === "archived") {
    await moveToCurrent(t, committed, turnIncrement);
  }
  sendCommitted(t, work, answered, result);
  session.emit(turnComplete(t, ended));
  if (counted) {
    try {
      t.runner.opts.onTurnCommitted?.(session);
    } catch (err) {
      t.runner.opts.log?.error({ sessionId: session.id, err: errInfo(err) }, "turn hook failed");
    }
  }
  return outcome;
}

/**
 * The session was rotated outside this runner (an operator's `sessions
 * rotate`, another process): keep the exchange in the conversation's current
 * session, and hand the conversation over so the next event goes there.
 */
async function moveToCurrent(t: TurnScope, committed: WindowMessage[], turnIncrement: number): Promise<void> {
  const { runner, session } = t;
  try {
    const current = await runner.opts.registry.resolveChatChannel(t.pending.event.conversation);
    await runner.opts.transcript.append(current.id, committed, { turnIncrement });
    runner.handoff(session, current, "rotated");
  } catch (err) {
    runner.opts.log?.warn({ sessionId: session.id, err: errInfo(err) }, "could not move a turn to the conversation's current session");
  }
}

/** Emits the committed answer and notices, each with the delivery the commit recorded for it. */
function sendCommitted(t: TurnScope, work: TurnWork, answered: boolean, result: CommitResult): void {
  const { session, turnId } = t;
  const { replyTo, inboundId } = t.pending.event;
  let i = 0;
  if (answered)
    session.emit({ kind: "text-final", sessionId: session.id, turnId, replyTo, text: work.text, inboundId, deliveryId: result.deliveries[i++]?.id });
  for (const n of work.notices) {
    session.emit({ kind: "notice", sessionId: session.id, severity: n.severity, text: n.text, replyTo, inboundId, deliveryId: result.deliveries[i++]?.id });
  }
}

/** Why a turn has no text to send: the tool round limit (what to do next), or an empty answer. */
function emptyAnswerNotice(toolLimit: number | undefined): { severity: Severity; text: string } {
  if (toolLimit === undefined) return { severity: "warn", text: "The agent returned an empty answer." };
  return {
    severity: "warn",
    text: `The agent used its ${toolLimit} tool rounds, the limit for one turn, without writing an answer. Send "continue" to let it go on from what its tools returned, or ask something narrower; the operator can raise TOOL_MAX_ROUNDS.`,
  };
}

/** The turn's commit, done once the model calls' usage settlements are written too (an agent without a meter has none: no extra step per turn). */
async function besideSettlements<T>(commit: Promise<T>, work: TurnWork): Promise<T> {
  if (!work.settled) return commit;
  const [r] = await Promise.all([commit, work.settled]);
  return r;
}
