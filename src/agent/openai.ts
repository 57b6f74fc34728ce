import { randomUUID } from "node:crypto";
import { errInfo } from "../log.js";
import type { SpeakerNames } from "./content.js";
import type { Span } from "@opentelemetry/api";
import { genAiMetricsOn, withTraceHeaders } from "../telemetry/index.js";
import { CompletionAccumulator, type CompletionResult, finishNotice } from "./completion.js";
import { chatSpan, toolSpan, traced } from "./gen-ai-trace.js";
import { type CallProgress, metered } from "./metered.js";
import { type Attempt, defaultSleep, postWithRetry, readBodyText } from "./http.js";
import { redact, safeUrl } from "./http-error.js";
import { sseData } from "./sse.js";
import { REJECTS_NAME, rejectsName, settingsToRequest, toWire, type WireMessage, wireMessages } from "./wire.js";
import { modelFetch } from "./transport.js";
import { DENIED, denyAll, runToolCallDetailed, type ApprovalHandler, type ToolRegistry } from "./tools.js";
import { aborted, AgentError, noopLog, type Agent, type AgentLog, type AgentOutput, type ChatMessage, type ModelSettings, type TurnRequest } from "./types.js";

export interface OpenAiAgentOptions {
  /** e.g. https://api.openai.com/v1, http://localhost:11434/v1 (Ollama), http://localhost:8080/v1 (llama.cpp). */
  baseUrl: string;
  apiKey?: string;
  settings: ModelSettings;
  tools?: ToolRegistry;
  /** Defaults to denyAll: tools run only when something approves them. */
  approval?: ApprovalHandler;
  /** Rounds of tool calls per turn; when the model asks for more, the turn ends with a notice. */
  maxToolRounds?: number;
  /** Per tool call (TOOL_TIMEOUT); past it the model gets an error result. */
  toolTimeoutMs?: number;
  /** From sending the request until response headers arrive. Not retried: a hung server stays hung while the user waits. */
  connectTimeoutMs?: number;
  /** Longest silence between two reads of the streamed body. */
  idleTimeoutMs?: number;
  /** Retries after the first attempt, on 429, 5xx and refused/reset connections, before any text streamed. */
  maxRetries?: number;
  retryBaseMs?: number;
  maxRetryDelayMs?: number;
  /** The HTTP client; default modelFetch (transport.ts), a fetch-compatible POST over node:http. */
  fetch?: typeof fetch;
  /** Injected by tests to observe retry delays without waiting them out. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  log?: AgentLog;
  /** How a group speaker's name reaches the model (MODEL_SPEAKER_NAMES); default the `name` field. */
  speakerNames?: SpeakerNames;
  /** Counts each model call's tokens and checks the budgets before it (issue 29); none: nothing is counted. */
  meter?: import("./model-meter.js").ModelMeter;
}

export { settingsToRequest } from "./wire.js";

export const OPENAI_DEFAULTS = {
  // Generous: local servers (Ollama, llama.cpp) load the model before sending headers.
  connectTimeoutMs: 60_000,
  // Reasoning models can think silently for a long time between chunks.
  idleTimeoutMs: 120_000,
  maxRetries: 3,
  retryBaseMs: 500,
  maxRetryDelayMs: 60_000,
  maxToolRounds: 8,
} as const;

function checkOptions(o: OpenAiAgentOptions): string {
  let url: URL;
  try {
    url = new URL(o.baseUrl);
  } catch {
    throw new AgentError("Config", "OPENAI_BASE_URL is not a valid URL; set it to the API root, e.g. https://api.openai.com/v1 or http://localhost:11434/v1.");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new AgentError("Config", `OPENAI_BASE_URL must use http or https, not ${url.protocol}; e.g. http://localhost:11434/v1.`);
  }
  if (!o.settings.model.trim()) throw new AgentError("Config", "No model name is set; set OPENAI_MODEL or choose one with /model.");
  return `${o.baseUrl.replace(/\/+$/, "")}/chat/completions`;
}

/** What every request of one agent shares: its options, with defaults filled in, and what they resolve to. */
interface Client {
  opts: OpenAiAgentOptions;
  o: ReturnType<typeof withDefaults>;
  /** The chat-completions URL. */
  url: string;
  headers: Record<string, string>;
  log: AgentLog;
  approval: ApprovalHandler;
  /** The tools offered to the model; undefined when there are none, or no tool rounds are allowed. */
  tools: ToolRegistry | undefined;
}

function withDefaults(opts: OpenAiAgentOptions) {
  return { ...OPENAI_DEFAULTS, ...definedOnly(opts) };
}

/** An agent backed by any OpenAI-compatible chat-completions server (OpenAI, Ollama, vLLM, llama.cpp). */
export function openAiAgent(opts: OpenAiAgentOptions): Agent & { readonly settings: ModelSettings } {
  const url = checkOptions(opts);
  const o = withDefaults(opts);
  const headers: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream" };
  if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
  const client: Client = {
    opts,
    o,
    url,
    headers,
    log: opts.log ?? noopLog,
    approval: opts.approval ?? denyAll,
    tools: o.maxToolRounds > 0 && opts.tools && opts.tools.list().length > 0 ? opts.tools : undefined,
  };
  return { name: `openai:${opts.settings.model}`, settings: opts.settings, run: (req) => runTurn(client, req) };
}

function requestBody(c: Client, messages: WireMessage[], usage: boolean): string {
  return JSON.stringify(requestFields(c, messages, usage));
}

function requestFields(c: Client, messages: WireMessage[], usage: boolean) {
  return {
    ...settingsToRequest(c.opts.settings),
    messages,
    stream: true,
    // Asked for only while a meter counts the call, a trace records it or the GenAI metrics count tokens: servers that refuse the field never see it otherwise.
    ...(usage && { stream_options: { include_usage: true } }),
    ...(c.tools && {
      tools: c.tools.list().map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.parameters } })),
    }),
  };
}

/** Streams one completion inside its `chat <model>` span (gen-ai-trace.ts), through the meter (each call reserved, then settled). */
function complete(
  c: Client,
  messages: WireMessage[],
  signal: AbortSignal,
  turn: { text: string; settlements: Promise<void>[] },
  kind: "turn" | "tool_round",
): AsyncGenerator<AgentOutput, CompletionResult> {
  const { settings } = c.opts;
  const fields = c.opts.meter && requestFields(c, messages, true);
  return metered(
    c.opts.meter,
    {
      kind,
      model: settings.model,
      messages,
      tools: fields?.tools,
      ...(settings.maxOutputTokens !== undefined && { maxOutputTokens: settings.maxOutputTokens }),
      settlements: turn.settlements,
      log: c.log,
    },
    (progress) => {
      const chat = chatSpan(settings, c.url, messages);
      return traced(chat, stream(c, messages, signal, turn, chat.span, progress));
    },
  );
}

/** Streams one completion. `turn.text` collects everything yielded, since the turn's final text spans rounds. */
async function* stream(
  c: Client,
  messages: WireMessage[],
  signal: AbortSignal,
  turn: { text: string },
  span: Span,
  progress: CallProgress,
): AsyncGenerator<AgentOutput, CompletionResult> {
  // Text from an earlier round is already on screen; keep this round's text from running into it.
  let lead = turn.text && !turn.text.endsWith("\n") ? "\n\n" : "";
  const emit = (t: string): AgentOutput => {
    const text = lead + t;
    lead = "";
    turn.text += text;
    progress.text += text;
    return { type: "text-delta", text };
  };
  const { opts, o, url, log } = c;
  log.debug({ url: safeUrl(url), model: opts.settings.model, messages: messages.length }, "model request");
  const { response, attempt } = await postWithRetry({
    url,
    // The model server's own spans (if it traces) join the message's trace.
    headers: withTraceHeaders(c.headers, span),
    body: requestBody(c, messages, opts.meter !== undefined || span.isRecording() || genAiMetricsOn()),
    signal,
    connectTimeoutMs: o.connectTimeoutMs,
    idleTimeoutMs: o.idleTimeoutMs,
    maxRetries: o.maxRetries,
    retryBaseMs: o.retryBaseMs,
    maxRetryDelayMs: o.maxRetryDelayMs,
    fetch: opts.fetch ?? modelFetch,
    sleep: opts.sleep ?? defaultSleep,
    log,
    secret: opts.apiKey,
  });
  progress.responded = true;
  const acc = new CompletionAccumulator((s: string) => redact(s, opts.apiKey));
  try {
    for await (const text of responseText(response, attempt, acc, signal, url)) yield emit(text);
    return acc.finish(`call_${randomUUID().slice(0, 8)}`);
  } catch (e) {
    throw attempt.classify(e);
  } finally {
    attempt.dispose();
  }
}

/** The new text of a completion's response as it streams (or all at once, from a server that ignored `stream: true`). */
async function* responseText(response: Response, attempt: Attempt, acc: CompletionAccumulator, signal: AbortSignal, url: string): AsyncGenerator<string> {
  const type = response.headers.get("content-type") ?? "";
  if (!response.body)
    throw new AgentError("MalformedStream", "The model server answered with an empty body. Check that OPENAI_BASE_URL points at an OpenAI-compatible API.");
  if (type.includes("text/html")) {
    throw new AgentError(
      "MalformedStream",
      `The model server at ${safeUrl(url)} answered with a web page, not an event stream. Check OPENAI_BASE_URL (it usually ends in /v1).`,
    );
  }
  if (type.includes("application/json")) {
    // The server ignored `stream: true`: take the whole answer as one delta.
    let all = "";
    for await (const t of readBodyText(response.body, attempt)) all += t;
    const text = acc.push(all);
    if (text) yield text;
    return;
  }
  for await (const data of sseData(readBodyText(response.body, attempt))) {
    const added = acc.push(data);
    if (added === null) break;
    if (signal.aborted) throw aborted();
    if (added) {
      yield added;
      if (signal.aborted) throw aborted();
    }
  }
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

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
