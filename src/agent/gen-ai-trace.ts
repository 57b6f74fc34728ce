/**
 * The agent's spans, after OpenTelemetry's GenAI semantic conventions: one
 * `chat <model>` span per model call (gen_ai.operation.name=chat, the request
 * and response models, token usage, finish reasons), one `execute_tool
 * <name>` span per tool call (MCP tools add mcp.method.name=tools/call and
 * their server) and an `approval <name>` span for each approval wait.
 *
 * Privacy: no prompt, message, tool argument or result is put on a span
 * unless OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true
 * (gen_ai.input.messages, gen_ai.output.messages, gen_ai.tool.call.arguments,
 * gen_ai.tool.call.result); never the API key.
 */
import { type Attributes, SpanKind } from "@opentelemetry/api";
import { captureContent, inSpan, type OpenSpan, openSpan, recordGenAiCall, tracing } from "../telemetry/index.js";
import type { CompletionResult } from "./completion.js";
import type { ModelSettings, ToolCall } from "./types.js";

/** A wire message as the chat request sends it (openai.ts), read loosely here. */
interface WireLike {
  role: string;
  content: unknown;
  tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

/** The semantic conventions' message shape: a role and its parts. */
function conventionMessages(messages: readonly WireLike[]): string {
  return JSON.stringify(
    messages.map((m) => {
      const parts: Array<Record<string, unknown>> = [];
      if (m.role === "tool") parts.push({ type: "tool_call_response", id: m.tool_call_id, response: m.content });
      else if (m.content !== null && m.content !== undefined && m.content !== "") parts.push({ type: "text", content: m.content });
      for (const c of m.tool_calls ?? []) parts.push({ type: "tool_call", id: c.id, name: c.function.name, arguments: c.function.arguments });
      return { role: m.role, parts };
    }),
  );
}

function server(url: string): Attributes {
  try {
    const u = new URL(url);
    return { "server.address": u.hostname, "server.port": Number(u.port || (u.protocol === "https:" ? 443 : 80)) };
  } catch {
    return {};
  }
}

/** One model call's span, and what its metrics need (gen_ai.client.*): when it started and its attributes. */
export interface ChatCall extends OpenSpan {
  startedAt: number;
  metricAttributes: Attributes;
}

/** Opens the span of one model call (a child of the turn's); nothing is computed while tracing is off. */
export function chatSpan(settings: ModelSettings, url: string, messages: readonly WireLike[]): ChatCall {
  if (!tracing()) return { ...openSpan("chat"), startedAt: 0, metricAttributes: {} };
  const metricAttributes: Attributes = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.model": settings.model,
    ...server(url),
  };
  const attributes: Attributes = {
    ...metricAttributes,
    ...(settings.temperature !== undefined && { "gen_ai.request.temperature": settings.temperature }),
    ...(settings.maxOutputTokens !== undefined && { "gen_ai.request.max_tokens": settings.maxOutputTokens }),
    ...(captureContent() && { "gen_ai.input.messages": conventionMessages(messages) }),
  };
  return { ...openSpan(`chat ${settings.model}`, { kind: SpanKind.CLIENT, attributes }), startedAt: performance.now(), metricAttributes };
}

/** Ends a model call's span with what the server answered (or the error; `result` undefined when the turn stopped reading), and records its metrics. */
export function endChat(chat: ChatCall, result: CompletionResult | undefined, err?: unknown): void {
  if (chat.startedAt) {
    const attributes = result?.model ? { ...chat.metricAttributes, "gen_ai.response.model": result.model } : chat.metricAttributes;
    const errorType =
      err === undefined ? (result ? undefined : "cancelled") : err instanceof Error ? String((err as { code?: unknown }).code ?? err.name) : "_OTHER";
    recordGenAiCall(attributes, (performance.now() - chat.startedAt) / 1000, result?.usage, errorType);
  }
  if (result && chat.span.isRecording()) {
    const toolCalls = result.toolCalls.map((c) => ({ id: c.id, function: { name: c.name, arguments: c.arguments } }));
    chat.span.setAttributes({
      ...(result.model && { "gen_ai.response.model": result.model }),
      ...(result.usage?.input !== undefined && { "gen_ai.usage.input_tokens": result.usage.input }),
      ...(result.usage?.output !== undefined && { "gen_ai.usage.output_tokens": result.usage.output }),
      ...(result.finishReason && { "gen_ai.response.finish_reasons": [result.finishReason] }),
      ...(captureContent() && { "gen_ai.output.messages": conventionMessages([{ role: "assistant", content: result.text, tool_calls: toolCalls }]) }),
    });
  }
  chat.end(err);
}

/** Streams `run` (one model call) inside `chat`, ended with the result, the error, or nothing when the turn stopped reading. */
export async function* traced<T>(chat: ChatCall, run: AsyncGenerator<T, CompletionResult>): AsyncGenerator<T, CompletionResult> {
  let result: CompletionResult | undefined;
  let failure: unknown;
  try {
    result = yield* run;
    return result;
  } catch (e) {
    failure = e;
    throw e;
  } finally {
    endChat(chat, result, failure);
  }
}

/** Runs one tool call inside its `execute_tool <name>` span; `run` returns what the call came to. */
export function toolSpan<T extends { content: string; decision: string }>(call: ToolCall, mcpServer: string | undefined, run: () => Promise<T>): Promise<T> {
  if (!tracing()) return run();
  const attributes: Attributes = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": call.name,
    "gen_ai.tool.call.id": call.id,
    "gen_ai.tool.type": mcpServer ? "extension" : "function",
    ...(mcpServer && { "mcp.method.name": "tools/call", "switchboard.mcp.server": mcpServer }),
    ...(captureContent() && { "gen_ai.tool.call.arguments": call.arguments }),
  };
  return inSpan(`execute_tool ${call.name}`, { kind: SpanKind.INTERNAL, attributes }, async (span) => {
    const outcome = await run();
    span.setAttribute("switchboard.tool.decision", outcome.decision);
    if (captureContent()) span.setAttribute("gen_ai.tool.call.result", outcome.content);
    return outcome;
  });
}

/** The wait for a tool call's approval (a person's click, or a policy's answer at once). */
export function approvalSpan<T>(call: ToolCall, wait: () => Promise<T>, decisionOf: (r: T) => string): Promise<T> {
  if (!tracing()) return wait();
  return inSpan(`approval ${call.name}`, { attributes: { "gen_ai.tool.name": call.name, "gen_ai.tool.call.id": call.id } }, async (span) => {
    const r = await wait();
    span.setAttribute("switchboard.approval.decision", decisionOf(r));
    return r;
  });
}
