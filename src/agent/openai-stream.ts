/** One chat-completions call of an OpenAI-compatible agent: its request, metered and traced, and its streamed response. */
import { randomUUID } from "node:crypto";
import type { Span } from "@opentelemetry/api";
import { genAiMetricsOn, withTraceHeaders } from "../telemetry/index.js";
import { CompletionAccumulator, type CompletionResult } from "./completion.js";
import { chatSpan, traced } from "./gen-ai-trace.js";
import { type CallProgress, metered } from "./metered.js";
import { type Attempt, defaultSleep, postWithRetry, readBodyText } from "./http.js";
import { redact, safeUrl } from "./http-error.js";
import type { Client } from "./openai-client.js";
import { sseData } from "./sse.js";
import { settingsToRequest, type WireMessage } from "./wire.js";
import { modelFetch } from "./transport.js";
import { aborted, AgentError, type AgentOutput } from "./types.js";

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
export function complete(
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
