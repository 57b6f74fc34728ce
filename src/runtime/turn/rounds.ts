import { randomBytes } from "node:crypto";
import { buildSystemPrompt } from "../../agent/prompt.js";
import { isAgentError, type ChatMessage } from "../../agent/types.js";
import { memoryScope } from "../../session/memory-scope.js";
import { errInfo } from "../../log.js";
import { readDurably, Unanswered } from "../durable-commit.js";
import { userEntry } from "../speaker.js";
import { toolEntry, windowToChat } from "../tool-rounds.js";
import type { TurnOutcome } from "../turn.js";
import type { TurnClock } from "./clock.js";
import type { TurnScope, TurnWork } from "./scope.js";

/** Prepares the turn's input and runs the model's rounds, streaming into `work`. Throws what the agent or a store read threw. */
export async function runRounds(t: TurnScope, work: TurnWork, signal: AbortSignal, clock: TurnClock): Promise<void> {
  const { session, turnId } = t;
  const { opts } = t.runner;
  const ev = t.pending.event;
  t.emit({ kind: "lifecycle", sessionId: session.id, phase: "turn-start", replyTo: ev.replyTo, detail: { turnId } });
  if (opts.freshWindow) {
    // Several processes: settings, persona and turns may have changed elsewhere since this session opened here.
    session.invalidateWindow();
    await readDurably(t.runner, t.pending.inboundIds, signal, () => session.reload());
  }
  if (opts.prepareInput && ev.attachments?.length) {
    const prepared = await opts.prepareInput(ev, signal, session.info);
    ({ text: work.userText, images: work.images, nothingToAnswer: work.nothingToAnswer } = prepared);
    work.notices.push(...prepared.notices);
  }
  const request = await modelRequest(t, work, signal);
  const agent = opts.agentFactory(session.metadata as Record<string, unknown>, { session: session.info, event: ev, holdTimeout: clock.hold });
  for await (const out of work.nothingToAnswer ? [] : agent.run({ ...request, signal })) {
    if (!t.live()) break;
    if (out.type === "text-delta") {
      work.text += out.text;
      t.emit({ kind: "text-delta", sessionId: session.id, turnId, replyTo: ev.replyTo, delta: out.text, text: work.text, inboundId: ev.inboundId });
    } else if (out.type === "notice") {
      work.notices.push({ severity: out.severity, text: out.text });
    } else if (out.type === "tool") {
      work.toolRounds.push(toolEntry(out));
    } else {
      work.text = out.text;
      if (out.toolLimit) work.toolLimit = out.toolRounds;
      if (out.settled) work.settled = out.settled;
    }
  }
}

/** What the model is given: the persona's prompt with the recalled memories, the transcript window, and the message. */
async function modelRequest(t: TurnScope, work: TurnWork, signal: AbortSignal): Promise<{ system: string; messages: ChatMessage[] }> {
  const { session, runner } = t;
  const { opts } = runner;
  const { inboundIds, event: ev } = t.pending;
  const window = await readDurably(runner, inboundIds, signal, () => session.window());
  const memories = opts.memories ? await readDurably(runner, inboundIds, signal, () => opts.memories!.recall(memoryScope(session.info).read, 20)) : [];
  const persona = opts.personaOf ? opts.personaOf(session.info) : opts.personas.resolve(session.info.persona).prompt;
  // In a group, each user message carries its speaker's name, so the model can tell Alice from Bob.
  const group = session.info.groupId !== undefined;
  const named = (name: string | undefined) => (group && name ? { name } : {});
  const messages: ChatMessage[] = [
    ...window.flatMap((m) => windowToChat(m).map((c) => (m.role === "user" ? { ...c, ...named(m.name) } : c))),
    { role: "user", content: work.userText, ...named(userEntry(ev, work.userText, undefined).name), ...(work.images?.length && { images: work.images }) },
  ];
  return { system: buildSystemPrompt(persona, memories), messages };
}

/**
 * What a turn whose rounds threw ends as, unless it was abandoned (the caller
 * asks that first): unanswered (the store did not answer before the event's TTL), fenced (the
 * conversation moved on), aborted, or failed, with a notice for the chat
 * when the time ran out or the agent failed.
 */
export function failedRounds(t: TurnScope, work: TurnWork, err: unknown, clock: TurnClock): TurnOutcome {
  if (err instanceof Unanswered) return "unanswered";
  if (!t.live()) return "fenced";
  if (clock.timedOut) {
    const seconds = Math.round(clock.timeoutMs / 1000);
    work.notices.push({ severity: "error", text: `The agent did not answer within ${seconds} s, so the turn was stopped. Please try again.` });
    return "failed";
  }
  if (isAgentError(err, "Aborted")) return "aborted";
  // A budget's refusal (or a budget check that could not be made) is written for the user: the one line, as it is.
  if (isAgentError(err, "Budget")) {
    work.notices.push({ severity: "warn", text: err.message });
    return "failed";
  }
  // The chat sees a reference only: the error names the model server's URL and quotes its answer, which are the operator's business.
  const ref = randomBytes(3).toString("hex");
  t.runner.opts.log?.warn({ sessionId: t.session.id, ref, err: errInfo(err) }, "agent turn failed");
  work.notices.push({ severity: "error", text: `Sorry, I couldn't answer that (ref ${ref}). Please try again.` });
  return "failed";
}
