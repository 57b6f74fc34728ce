import { randomBytes, randomUUID } from "node:crypto";
import { buildSystemPrompt } from "../agent/prompt.js";
import { isAgentError, type ChatMessage } from "../agent/types.js";
import { memoryScope } from "../session/memory-scope.js";
import type { MessageEvent, Severity } from "./events.js";
import type { Reply } from "./ledger.js";
import type { LiveSession, WindowMessage } from "./live-session.js";
import { SwitchboardError } from "../errors.js";
import { errInfo } from "../log.js";
import { commitDurably, readDurably, Unanswered } from "./durable-commit.js";
import { renderUserText } from "./pending.js";
import { TurnStopped, stoppedEntries } from "./stop.js";
import { toolEntry, windowToChat } from "./tool-rounds.js";
import { userEntry } from "./speaker.js";
import type { Runner } from "./runner.js";

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
 * Runs one agent turn for a pending message. The run is fenced by the
 * session generation captured at its start: once the session is rotated,
 * stopped or switched, nothing more it produces is emitted, and it commits
 * nothing but the inbound record's handled state.
 */
export async function executeTurn(runner: Runner, session: LiveSession, p: Pending, generation: number, abort: AbortController): Promise<TurnOutcome> {
  const { opts } = runner;
  const ev = p.event;
  const turnId = randomUUID();
  const live = () => session.generation === generation;
  const emit = (e: Parameters<LiveSession["emit"]>[0]) => {
    if (live()) session.emit(e);
  };
  const timeoutMs = opts.turnTimeoutMs ?? DEFAULT_TIMEOUT_MS;
  let timedOut = false;
  const onTimeout = () => {
    timedOut = true;
    abort.abort(new Error("turn timeout"));
  };
  let timer = setTimeout(onTimeout, timeoutMs);
  timer.unref?.();
  // A person deciding on a tool call is not the agent being slow: the turn's clock stops while they decide.
  let left = timeoutMs;
  let since = Date.now();
  let holds = 0;
  const holdTimeout = (): (() => void) => {
    if (holds++ === 0) {
      clearTimeout(timer);
      left = Math.max(1_000, left - (Date.now() - since));
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--holds === 0 && !abort.signal.aborted) {
        since = Date.now();
        timer = setTimeout(onTimeout, left);
        timer.unref?.();
      }
    };
  };
  // Typing shows only when the answer is not there at once: a fast reply needs no indicator, and each one is a platform call under the same rate limits as replies.
  const showTyping = () => emit({ kind: "typing", sessionId: session.id, replyTo: ev.replyTo });
  let typing: NodeJS.Timeout | undefined;
  const typingStart = setTimeout(() => {
    showTyping();
    typing = setInterval(showTyping, opts.typingIntervalMs ?? DEFAULT_TYPING_MS);
    typing.unref?.();
  }, opts.typingDelayMs ?? DEFAULT_TYPING_DELAY_MS);
  typingStart.unref?.();

  let userText = renderUserText(ev);
  let images: ChatMessage["images"];
  /** The attachments left nothing to answer (an oversize image alone): only their notices are sent. */
  let nothingToAnswer = false;
  let text = "";
  /** Set when the agent stopped at TOOL_MAX_ROUNDS: how many rounds it used. */
  let toolLimit: number | undefined;
  const toolRounds: WindowMessage[] = [];
  const notices: Array<{ severity: Severity; text: string }> = [];
  let outcome: TurnOutcome = "answered";
  try {
    emit({ kind: "lifecycle", sessionId: session.id, phase: "turn-start", replyTo: ev.replyTo, detail: { turnId } });
    if (opts.freshWindow) {
      // Several processes: settings, persona and turns may have changed elsewhere since this session opened here.
      session.invalidateWindow();
      await readDurably(runner, p.inboundIds, abort.signal, () => session.reload());
    }
    if (opts.prepareInput && ev.attachments?.length) {
      const prepared = await opts.prepareInput(ev, abort.signal);
      ({ text: userText, images, nothingToAnswer } = prepared);
      notices.push(...prepared.notices);
    }
    const window = await readDurably(runner, p.inboundIds, abort.signal, () => session.window());
    const memories = opts.memories
      ? await readDurably(runner, p.inboundIds, abort.signal, () => opts.memories!.recall(memoryScope(session.info).read, 20))
      : [];
    const persona = opts.personas.resolve(session.info.persona);
    // In a group, each user message carries its speaker's name, so the model can tell Alice from Bob.
    const group = session.info.groupId !== undefined;
    const named = (name: string | undefined) => (group && name ? { name } : {});
    const messages: ChatMessage[] = [
      ...window.flatMap((m) => windowToChat(m).map((c) => (m.role === "user" ? { ...c, ...named(m.name) } : c))),
      { role: "user", content: userText, ...named(userEntry(ev, userText, undefined).name), ...(images?.length && { images }) },
    ];
    const agent = opts.agentFactory(session.metadata as Record<string, unknown>, { session: session.info, event: ev, holdTimeout });
    for await (const out of nothingToAnswer ? [] : agent.run({ system: buildSystemPrompt(persona.prompt, memories), messages, signal: abort.signal })) {
      if (!live()) break;
      if (out.type === "text-delta") {
        text += out.text;
        emit({ kind: "text-delta", sessionId: session.id, turnId, replyTo: ev.replyTo, delta: out.text, text, inboundId: ev.inboundId });
      } else if (out.type === "notice") {
        notices.push({ severity: out.severity, text: out.text });
      } else if (out.type === "tool") {
        toolRounds.push(toolEntry(out));
      } else {
        text = out.text;
        if (out.toolLimit) toolLimit = out.toolRounds;
      }
    }
  } catch (err) {
    if (abort.signal.reason instanceof TurnAbandoned) outcome = "abandoned";
    else if (err instanceof Unanswered) outcome = "unanswered";
    else if (!live()) outcome = "fenced";
    else if (timedOut) {
      outcome = "failed";
      notices.push({
        severity: "error",
        text: `The agent did not answer within ${Math.round(timeoutMs / 1000)} s, so the turn was stopped. Please try again.`,
      });
    } else if (isAgentError(err, "Aborted")) {
      outcome = "aborted";
    } else {
      outcome = "failed";
      // The chat sees a reference only: the error names the model server's URL and quotes its answer, which are the operator's business.
      const ref = randomBytes(3).toString("hex");
      opts.log?.warn({ sessionId: session.id, ref, err: errInfo(err) }, "agent turn failed");
      notices.push({ severity: "error", text: `Sorry, I couldn't answer that (ref ${ref}). Please try again.` });
    }
  } finally {
    clearTimeout(timer);
    clearTimeout(typingStart);
    clearInterval(typing);
  }
  // Shutting down: nothing of this turn is committed, so the event is not marked handled and the
  // next start answers it. (Before, a shutdown fenced the turn, which recorded the event as handled
  // with no answer: a message lost.)
  if (abort.signal.reason instanceof TurnAbandoned) {
    session.emit({
      kind: "turn-complete",
      sessionId: session.id,
      turnId,
      replyTo: ev.replyTo,
      inboundId: ev.inboundId,
      inboundIds: p.inboundIds,
      outcome: "abandoned",
    });
    return "abandoned";
  }
  if (outcome === "unanswered") {
    emit({ kind: "turn-complete", sessionId: session.id, turnId, replyTo: ev.replyTo, inboundId: ev.inboundId, inboundIds: p.inboundIds, outcome: "failed" });
    return outcome;
  }
  if (!live()) outcome = outcome === "failed" ? "failed" : "fenced";

  if (outcome === "fenced") {
    // The conversation moved on (/new, a switch): record only that the inbound was handled. A /stop keeps
    // what the chat was shown: the question and the partial answer, marked stopped.
    const kept = abort.signal.reason instanceof TurnStopped ? stoppedEntries(userEntry(ev, userText, p.sourceId), toolRounds, text) : [];
    try {
      const r = await commitDurably(runner, { sessionId: session.id, inboundIds: p.inboundIds, messages: kept, turnIncrement: 0, replies: [] });
      if (r === "unanswered") return "unanswered";
      if (r.transcript === "ok") session.remember(kept);
    } finally {
      // Past the fence, yet every turn ends: whoever tracks it (a streamed draft, the latency metric) lets go of it.
      session.emit({
        kind: "turn-complete",
        sessionId: session.id,
        turnId,
        replyTo: ev.replyTo,
        inboundId: ev.inboundId,
        inboundIds: p.inboundIds,
        outcome: "fenced",
      });
    }
    return outcome;
  }

  const answered = outcome === "answered" && text.length > 0;
  // A turn counts when the agent answered or worked: tool rounds that ended without text (the round limit) are a turn the next one continues.
  const counted = answered || (outcome === "answered" && toolRounds.length > 0);
  if (outcome === "answered" && text.length === 0 && !nothingToAnswer) notices.push(emptyAnswerNotice(toolLimit));
  const entry = userEntry(ev, userText, p.sourceId);
  const committed: Array<WindowMessage & { meta?: string; sourceId?: string }> = [
    entry,
    ...toolRounds,
    ...(answered ? [{ role: "assistant" as const, content: text }] : []),
  ];
  const replies: Reply[] = [
    ...(answered ? [{ replyTo: ev.replyTo, text, kind: "reply" as const }] : []),
    ...notices.map((n) => ({ replyTo: ev.replyTo, text: n.text, kind: "notice" as const, severity: n.severity })),
  ];
  const result = await commitDurably(runner, {
    sessionId: session.id,
    inboundIds: p.inboundIds,
    messages: committed,
    turnIncrement: counted ? 1 : 0,
    replies,
  });
  // Unanswered, or an earlier attempt landed (its acknowledgement lost, its replies recorded and on their way):
  // nothing more to send from here, but the turn still ends, so what waits for its end is released.
  if (result === "unanswered" || result.transcript === "duplicate") {
    session.emit({
      kind: "turn-complete",
      sessionId: session.id,
      turnId,
      replyTo: ev.replyTo,
      inboundId: ev.inboundId,
      inboundIds: p.inboundIds,
      outcome: result === "unanswered" ? "failed" : outcome === "answered" ? "answered" : outcome === "aborted" ? "aborted" : "failed",
    });
    return result === "unanswered" ? "unanswered" : outcome;
  }
  if (result.transcript === "ok") {
    session.remember(committed);
    if (counted) session.noteTurn(1);
  } else if (result.transcript === "archived") {
    // Rotated outside this runner (an operator's `sessions rotate`, another process): keep the
    // exchange in the conversation's current session, and retire this one so the next event re-resolves.
    try {
      const current = await opts.registry.resolveChatChannel(ev.conversation);
      await opts.transcript.append(current.id, committed, { turnIncrement: counted ? 1 : 0 });
      runner.handoff(session, current, "rotated");
    } catch (err) {
      opts.log?.warn({ sessionId: session.id, err: errInfo(err) }, "could not move a turn to the conversation's current session");
    }
  }
  // Committed: from here the replies are durable and are sent even if the session moves on.
  let i = 0;
  if (answered)
    session.emit({
      kind: "text-final",
      sessionId: session.id,
      turnId,
      replyTo: ev.replyTo,
      text,
      inboundId: ev.inboundId,
      deliveryId: result.deliveries[i++]?.id,
    });
  for (const n of notices)
    session.emit({
      kind: "notice",
      sessionId: session.id,
      severity: n.severity,
      text: n.text,
      replyTo: ev.replyTo,
      inboundId: ev.inboundId,
      deliveryId: result.deliveries[i++]?.id,
    });
  session.emit({
    kind: "turn-complete",
    sessionId: session.id,
    turnId,
    replyTo: ev.replyTo,
    inboundId: ev.inboundId,
    inboundIds: p.inboundIds,
    outcome: outcome === "answered" ? "answered" : outcome === "aborted" ? "aborted" : "failed",
  });
  if (counted) {
    try {
      opts.onTurnCommitted?.(session);
    } catch (err) {
      opts.log?.error({ sessionId: session.id, err: errInfo(err) }, "turn hook failed");
    }
  }
  return outcome;
}

/** Why a turn has no text to send: the tool round limit (what to do next), or an empty answer. */
function emptyAnswerNotice(toolLimit: number | undefined): { severity: Severity; text: string } {
  if (toolLimit === undefined) return { severity: "warn", text: "The agent returned an empty answer." };
  return {
    severity: "warn",
    text: `The agent used its ${toolLimit} tool rounds, the limit for one turn, without writing an answer. Send "continue" to let it go on from what its tools returned, or ask something narrower; the operator can raise TOOL_MAX_ROUNDS.`,
  };
}
