import { errInfo } from "../log.js";
import type { CompletionResult } from "./completion.js";
import type { MeterTicket, ModelCallKind, ModelMeter, ModelUsage } from "./model-meter.js";
import type { Transcriber, Transcription, TranscriptionClient } from "./transcribe.js";
import { estimateCallTokens, estimateTextTokens, promptBound } from "./token-estimate.js";
import type { AgentLog, AgentOutput } from "./types.js";

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
  /**
   * Where the settlement of a call that finished goes instead of being waited for: the turn waits for
   * them beside its own commit (issue 31: on SQLite they share one group commit, and the answer no
   * longer waits for a count and a commit of its own before the turn's). Without it, each is waited for.
   */
  settlements?: Promise<void>[];
  /** Where a count that failed is said (the call is then charged its bounds). */
  log?: AgentLog;
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
    if (result) {
      const settling = settleFinished(ticket, call, result, latencyMs);
      if (call.settlements) {
        call.settlements.push(settling);
        // Handled here too: a turn that fails after this call never collects it (the meter logs a store's refusal itself).
        settling.catch(() => {});
      } else await settling;
    } else if (progress.responded) {
      const counted = await estimateCallTokens(call.messages, call.tools, progress.text);
      await ticket.settle({
        model: call.model,
        promptTokens: counted.prompt,
        completionTokens: counted.completion,
        cachedTokens: 0,
        estimated: true,
        latencyMs,
      });
    } else await ticket.release();
  }
}

/**
 * A finished call's settlement (it may be left to run beside the turn's commit): a count that fails (the tokenizer's worker gone) charges the bounds instead (promptBound, the answer's
 * UTF-8 bytes), which no count exceeds; the meter retries a settlement the store refused.
 */
async function settleFinished(ticket: MeterTicket, call: MeteredCall, r: CompletionResult, latencyMs: number): Promise<void> {
  let usage: ModelUsage;
  try {
    usage = await usageOf(call, r, latencyMs);
  } catch (err) {
    // Charged, never lost: the bounds are above any count. Said, because a dead tokenizer overcharges every call until it is back.
    call.log?.warn(
      { err: errInfo(err), model: call.model },
      "could not count a model call's tokens; charged its upper bound (prompt bound, answer's UTF-8 bytes) instead",
    );
    const completion = r.text + r.toolCalls.map((c) => c.name + c.arguments).join("");
    const promptTokens = promptBound(call.messages, call.tools);
    usage = { model: call.model, promptTokens, completionTokens: Buffer.byteLength(completion, "utf8"), cachedTokens: 0, estimated: true, latencyMs };
  }
  await ticket.settle(usage);
}

/** The provider's usage; without it, the tokenizer's count of the prompt and of the answer (text and tool calls), marked estimated. */
async function usageOf(call: MeteredCall, r: CompletionResult, latencyMs: number): Promise<ModelUsage> {
  const { model } = call;
  if (r.usage?.input !== undefined && r.usage.output !== undefined)
    return { model, promptTokens: r.usage.input, completionTokens: r.usage.output, cachedTokens: r.usage.cached ?? 0, estimated: false, latencyMs };
  const calls = r.toolCalls.map((c) => c.name + c.arguments).join("");
  // One exchange with the tokenizer's worker for both counts (estimateCallTokens).
  const counted = await estimateCallTokens(call.messages, call.tools, r.text + calls);
  return { model, promptTokens: counted.prompt, completionTokens: counted.completion, cachedTokens: 0, estimated: true, latencyMs };
}

/**
 * A transcriber whose every request goes through the meter (kind
 * "transcription"): refused before the upload when a budget is used up (a
 * cost budget reserves the audio's duration, as the platform gave it, at
 * the model's perMinute price), then settled with what the server says it
 * used (OpenAI's `usage`: seconds of audio or tokens), else the platform's
 * duration and the transcript's tokens (an estimate); released when the
 * request failed.
 */
export function meteredTranscriber(transcribe: TranscriptionClient, model: string, meter: ModelMeter | undefined): Transcriber {
  if (!meter) return async (audio, signal) => (await transcribe(audio, signal)).text;
  return async (audio, signal) => {
    const said = audio.durationSec;
    const platformSeconds = said !== undefined && Number.isFinite(said) && said >= 0 ? said : undefined;
    const ticket = await meter.reserve({
      kind: "transcription",
      model,
      maxTokens: 0,
      ...(platformSeconds !== undefined && { audioSeconds: platformSeconds }),
    });
    const t0 = performance.now();
    let r: Transcription;
    try {
      r = await transcribe(audio, signal);
    } catch (err) {
      await ticket.release();
      throw err;
    }
    const audioSeconds = r.seconds ?? platformSeconds;
    const counts = r.tokens
      ? { promptTokens: r.tokens.input, completionTokens: r.tokens.output, estimated: false }
      : { promptTokens: 0, completionTokens: await estimateTextTokens(r.text), estimated: true };
    await ticket.settle({
      model,
      ...counts,
      cachedTokens: 0,
      latencyMs: performance.now() - t0,
      ...(audioSeconds !== undefined && { audioSeconds }),
    });
    return r.text;
  };
}
