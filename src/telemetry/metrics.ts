/**
 * The GenAI client metrics of OpenTelemetry's semantic conventions:
 * `gen_ai.client.token.usage` (a histogram of tokens per call, by
 * gen_ai.token.type input/output) and `gen_ai.client.operation.duration`
 * (seconds per call). The instruments are set by meter.ts while telemetry
 * is on; off, `recordGenAiCall` returns at once. The Prometheus /metrics
 * endpoint (src/gateway/metrics.ts) is separate and unchanged.
 */
import type { Attributes, Histogram } from "@opentelemetry/api";

export interface GenAiInstruments {
  tokenUsage: Histogram;
  operationDuration: Histogram;
}

let instruments: GenAiInstruments | undefined;

/** Set by the SDK while it runs (meter.ts), cleared on its shutdown. */
export function setGenAiInstruments(i: GenAiInstruments | undefined): void {
  instruments = i;
}

/** The GenAI client metrics are being recorded (telemetry on, with a metrics exporter). */
export function genAiMetricsOn(): boolean {
  return instruments !== undefined;
}

/**
 * Records one model call: its duration, and its token counts when the server
 * reported them. `attributes` are the call's (gen_ai.operation.name,
 * gen_ai.provider.name, gen_ai.request.model, gen_ai.response.model, server.*);
 * a failed call adds error.type to the duration only.
 */
export function recordGenAiCall(attributes: Attributes, seconds: number, usage: { input?: number; output?: number } | undefined, errorType?: string): void {
  if (!instruments) return;
  instruments.operationDuration.record(seconds, errorType ? { ...attributes, "error.type": errorType } : attributes);
  if (usage?.input !== undefined) instruments.tokenUsage.record(usage.input, { ...attributes, "gen_ai.token.type": "input" });
  if (usage?.output !== undefined) instruments.tokenUsage.record(usage.output, { ...attributes, "gen_ai.token.type": "output" });
}
