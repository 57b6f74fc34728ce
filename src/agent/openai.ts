/** The OpenAI-compatible agent: a turn as rounds of a model call (openai-stream.ts) and the tool calls it asks for. */
import { errInfo } from "../log.js";
import type { SpeakerNames } from "./content.js";
import { type CompletionResult, finishNotice } from "./completion.js";
import { toolSpan } from "./gen-ai-trace.js";
import { safeUrl } from "./http-error.js";
import { type Client, type OpenAiAgentOptions, openAiClient } from "./openai-client.js";
import { complete } from "./openai-stream.js";
import { REJECTS_NAME, rejectsName, toWire, type WireMessage, wireMessages } from "./wire.js";
import { DENIED, runToolCallDetailed } from "./tools.js";
import { aborted, type Agent, type AgentOutput, type ModelSettings, type TurnRequest } from "./types.js";

export { settingsToRequest } from "./wire.js";

/** An agent backed by any OpenAI-compatible chat-completions server (OpenAI, Ollama, vLLM, llama.cpp). */
export function openAiAgent(opts: OpenAiAgentOptions): Agent & { readonly settings: ModelSettings } {
  const client = openAiClient(opts);
  return { name: `openai:${opts.settings.model}`, settings: opts.settings, run: (req) => runTurn(client, req) };
}

async function* runTurn(c: Client, req: TurnRequest): AsyncGenerator<AgentOutput> {
  const { o, log } = c;
  const turn = { text: "", settlements: [] as Promise<void>[] };
  // The calls' settlements still being written, for whoever ends the turn to wait for (never rejects: a failure is logged).
  const settled = () =>
    turn.settlements.length > 0 && {
      settled: Promise.all(turn.settlements).then(
        () => undefined,
        (err: unknown) => log.error({ err: errInfo(err) }, "could not settle a model call's usage"),
      ),
    };
  let speakers: SpeakerNames = c.opts.speakerNames === "prefix" || REJECTS_NAME.has(c.url) ? "prefix" : "name";
  let messages = wireMessages(req, speakers);
  for (let rounds = 0; ; rounds++) {
    if (req.signal.aborted) throw aborted();
    let result: CompletionResult;
    try {
      result = yield* complete(c, messages, req.signal, turn, rounds === 0 ? "turn" : "tool_round");
    } catch (err) {
      // A server that refuses the `name` field (some templates only take role and content): say who spoke
      // as a [Name] prefix instead, from now on, for this server.
      if (rounds > 0 || speakers === "prefix" || !rejectsName(err) || !req.messages.some((m) => m.role === "user" && m.name)) throw err;
      log.warn({ url: safeUrl(c.url) }, "the model server refused the message name field; naming group speakers as a [Name] prefix from now on");
      REJECTS_NAME.add(c.url);
      speakers = "prefix";
      messages = wireMessages(req, speakers);
      result = yield* complete(c, messages, req.signal, turn, "turn");
    }
    const cut = finishNotice(result);
    if (cut) yield cut;
    if (result.toolCalls.length === 0) {
      yield { type: "done", text: turn.text, toolRounds: rounds, ...settled() };
      return;
    }
    if (rounds >= o.maxToolRounds) {
      log.info({ rounds, limit: o.maxToolRounds }, "tool round limit reached");
      // With no text at all, the turn (src/runtime/turn.ts) tells the user instead, as the turn's one answer.
      if (turn.text)
        yield {
          type: "notice",
          severity: "warn",
          text: `Stopped after ${rounds} rounds of tool calls, the limit for one turn; the answer may be incomplete. Send another message to let the agent continue.`,
        };
      yield { type: "done", text: turn.text, toolRounds: rounds, toolLimit: true, ...settled() };
      return;
    }
    messages.push(toWire({ role: "assistant", content: result.text, toolCalls: result.toolCalls }));
    yield* runToolCalls(c, result, messages, req.signal, rounds + 1);
  }
}

/** Runs the round's tool calls in order (each through the approval handler), appending each result to `messages`. */
async function* runToolCalls(c: Client, result: CompletionResult, messages: WireMessage[], signal: AbortSignal, round: number): AsyncGenerator<AgentOutput> {
  for (const call of result.toolCalls) {
    const server = c.tools?.get(call.name)?.server;
    const outcome = await toolSpan(call, server, () =>
      runToolCallDetailed(call, c.tools, c.approval, signal, {
        ...(c.opts.toolTimeoutMs !== undefined && { timeoutMs: c.opts.toolTimeoutMs }),
      }),
    );
    const { content } = outcome;
    // A person's denial is already on the approval card; a policy's is told here.
    if (content.startsWith(DENIED) && !outcome.note)
      yield { type: "notice", severity: "info", text: `The agent wanted to use the tool ${call.name}; it was ${DENIED}.` };
    c.log.debug({ tool: call.name, round, decision: outcome.decision }, "tool call finished");
    yield { type: "tool", call, decision: outcome.decision, result: content, ...(server && { server }), ...(outcome.note && { note: outcome.note }) };
    messages.push({ role: "tool", tool_call_id: call.id, content });
  }
}
