/**
 * OpenTelemetry tracing (README "Telemetry"). Off unless an OTLP endpoint is
 * set: then nothing of the SDK is loaded (this file imports only the API,
 * whose calls are no-ops without a provider, and the span helpers in
 * spans.ts short-circuit before reaching it). On, `startTelemetry` loads
 * sdk.ts, which registers the Node tracer provider with a bounded batch
 * processor and the OTLP/HTTP exporter, and starts the GenAI client metrics
 * (meter.ts, metrics.ts).
 *
 * Below every layer, beside the logger: any layer may import it, it imports
 * no layer (test/boundary.test.ts).
 */
import type { Config } from "../config.js";
import type { Logger } from "../log.js";
import { setTracing } from "./state.js";

export { genAiMetricsOn, recordGenAiCall } from "./metrics.js";
export { captureContent, hashId, tracing } from "./state.js";
export {
  activeTraceHeaders,
  callerCarrier,
  contextFrom,
  inContext,
  inDelivery,
  inSpan,
  openSpan,
  recordSpan,
  traceCarrier,
  tracedFetch,
  withTraceHeaders,
  type OpenSpan,
  type TraceCarrier,
} from "./spans.js";

export type TelemetryConfig = Pick<
  Config,
  | "OTEL_SDK_DISABLED"
  | "OTEL_EXPORTER_OTLP_ENDPOINT"
  | "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
  | "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
  | "OTEL_METRIC_EXPORT_INTERVAL"
  | "OTEL_EXPORTER_OTLP_PROTOCOL"
  | "OTEL_EXPORTER_OTLP_HEADERS"
  | "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
>;

export interface Telemetry {
  /** Tracing is on: spans are recorded and exported. */
  readonly on: boolean;
  /** Flushes what is queued and stops exporting, within `timeoutMs` at most (an export that hangs never holds the stop). */
  shutdown(timeoutMs?: number): Promise<void>;
}

/** Whether the configuration turns tracing on: an endpoint is set and OTEL_SDK_DISABLED is not true. */
export function telemetryWanted(c: TelemetryConfig): boolean {
  return !c.OTEL_SDK_DISABLED && (c.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined || c.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined);
}

/** The traces URL: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else the base endpoint with /v1/traces. */
export function tracesUrl(c: TelemetryConfig): string | undefined {
  if (c.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return c.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (!c.OTEL_EXPORTER_OTLP_ENDPOINT) return undefined;
  return `${c.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, "")}/v1/traces`;
}

/**
 * The metrics URL: OTEL_EXPORTER_OTLP_METRICS_ENDPOINT as it is, else the base endpoint with /v1/metrics
 * (none with only a traces URL: then no metrics are exported).
 */
export function metricsUrl(c: TelemetryConfig): string | undefined {
  if (c.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) return c.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT;
  if (!c.OTEL_EXPORTER_OTLP_ENDPOINT) return undefined;
  return `${c.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, "")}/v1/metrics`;
}

const OFF: Telemetry = { on: false, shutdown: async () => undefined };

/** One process, one provider: a second start while one runs is refused (the first stays). */
let running: Telemetry | undefined;

/**
 * Starts tracing when the configuration asks for it, else returns a Telemetry
 * that is off and loads nothing. A start that fails (a bad value the SDK
 * refuses) is logged and the gateway runs without tracing.
 */
export async function startTelemetry(c: TelemetryConfig, log: Logger): Promise<Telemetry> {
  if (!telemetryWanted(c)) return OFF;
  if (running) {
    log.warn("telemetry is already running in this process; this app's spans go to the same exporter");
    return OFF;
  }
  try {
    const { startSdk } = await import("./sdk.js");
    const sdk = startSdk({
      url: tracesUrl(c)!,
      metricsUrl: metricsUrl(c),
      metricIntervalMs: c.OTEL_METRIC_EXPORT_INTERVAL,
      protocol: c.OTEL_EXPORTER_OTLP_PROTOCOL ?? "http/protobuf",
      headers: c.OTEL_EXPORTER_OTLP_HEADERS,
      log,
    });
    setTracing(true, c.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT);
    const t: Telemetry = {
      on: true,
      async shutdown(timeoutMs = 3000) {
        if (running !== t) return;
        running = undefined;
        setTracing(false, false);
        await sdk.shutdown(timeoutMs);
      },
    };
    running = t;
    log.info(
      {
        url: tracesUrl(c),
        metricsUrl: metricsUrl(c),
        protocol: c.OTEL_EXPORTER_OTLP_PROTOCOL ?? "http/protobuf",
        captureContent: c.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
      },
      "telemetry on: traces and the GenAI metrics go to the OTLP endpoint",
    );
    return t;
  } catch (err) {
    log.error({ err: { message: err instanceof Error ? err.message : String(err) } }, "telemetry could not start; running without it");
    return OFF;
  }
}
