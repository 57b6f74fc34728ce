import type { CompletionResult } from "./completion.js";
import type { ModelCallKind, ModelMeter, ModelUsage } from "./model-meter.js";
import { estimatePromptTokens, estimateTextTokens, promptBound } from "./token-estimate.js";
import type { AgentOutput } from "./types.js";

/**
 * What a call reserves for its output when no max output tokens is set: the
 * request then names no limit, so a budget's guarantee (spent never past
 * the limit plus one call) holds only as far as the model stays under it.
 */
export const UNSET_OUTPUT_RESERVE = 4096;

/** How far one call got: whether the server answered (it may then charge), and the text it sent. */
export interface CallProgress {
  responded: boolean;
  text: string;
}

export interface MeteredCall {
  kind: ModelCallKind;
  model: string;
  /** The request's messages and tools, as sent: the prompt's estimate. */
  messages: readonly unknown[];
  tools?: unknown;
  maxOutputTokens?: number;
}

/**
 * One model call through the meter: its maximum (promptBound plus the output limit) reserved before the request
 * (a refusal throws, and no request is made), then settled with the
 * provider's usage, or a tokenizer estimate marked as one when the provider
 * sent none. A call that fails after the server answered is settled by
 * estimate (the provider may have charged for it); one that never reached it
 * is released.
 */
export async function* metered(
  meter: ModelMeter | undefined,
  call: MeteredCall,
  run: (progress: CallProgress) => AsyncGenerator<AgentOutput, CompletionResult>,
): AsyncGenerator<AgentOutput, CompletionResult> {
  const progress: CallProgress = { responded: false, text: "" };
  if (!meter) return yield* run(progress);
  const ticket = await meter.reserve({
    kind: call.kind,
    model: call.model,
    maxTokens: promptBound(call.messages, call.tools) + (call.maxOutputTokens ?? UNSET_OUTPUT_RESERVE),
  });
  const t0 = performance.now();
  let result: CompletionResult | undefined;
  try {
    result = yield* run(progress);
    return result;
  } finally {
    const latencyMs = performance.now() - t0;
    if (result) await ticket.settle(await usageOf(call, result, latencyMs));
    else if (progress.responded)
      await ticket.settle({
        model: call.model,
        promptTokens: await estimatePromptTokens(call.messages, call.tools),
        completionTokens: await estimateTextTokens(progress.text),
        cachedTokens: 0,
        estimated: true,
        latencyMs,
      });
    else await ticket.release();
  }
}

/** The provider's usage; without it, the tokenizer's count of the prompt and of the answer (text and tool calls), marked estimated. */
async function usageOf(call: MeteredCall, r: CompletionResult, latencyMs: number): Promise<ModelUsage> {
  const { model } = call;
  if (r.usage?.input !== undefined && r.usage.output !== undefined)
    return { model, promptTokens: r.usage.input, completionTokens: r.usage.output, cachedTokens: r.usage.cached ?? 0, estimated: false, latencyMs };
  const calls = r.toolCalls.map((c) => c.name + c.arguments).join("");
  return {
    model,
    promptTokens: await estimatePromptTokens(call.messages, call.tools),
    completionTokens: await estimateTextTokens(r.text + calls),
    cachedTokens: 0,
    estimated: true,
    latencyMs,
  };
}

/**
 * A transcriber whose every request goes through the meter (kind
 * "transcription"): refused before the upload when a budget is used up,
 * then counted by the transcript's tokens (an estimate: the JSON answer
 * carries no usage), released when the server was never reached.
 */
export function meteredTranscriber(
  transcribe: (audio: import("./transcribe.js").AudioInput, signal: AbortSignal) => Promise<string>,
  model: string,
  meter: ModelMeter | undefined,
): typeof transcribe {
  if (!meter) return transcribe;
  return async (audio, signal) => {
    const ticket = await meter.reserve({ kind: "transcription", model, maxTokens: 0 });
    const t0 = performance.now();
    let text: string;
    try {
      text = await transcribe(audio, signal);
    } catch (err) {
      await ticket.release();
      throw err;
    }
    const completionTokens = await estimateTextTokens(text);
    await ticket.settle({ model, promptTokens: 0, completionTokens, cachedTokens: 0, estimated: true, latencyMs: performance.now() - t0 });
    return text;
  };
}
