/**
 * The OpenTelemetry SDK, loaded only when telemetry is on (index.ts imports it
 * dynamically): the Node tracer provider (AsyncLocalStorage context, W3C
 * trace context propagation), one BatchSpanProcessor and the OTLP/HTTP
 * exporter for the configured protocol; beside it the meter provider of the
 * GenAI client metrics (meter.ts).
 *
 * What the SDK reads from the environment itself: OTEL_SERVICE_NAME and
 * OTEL_RESOURCE_ATTRIBUTES (the env detector), OTEL_TRACES_SAMPLER(_ARG),
 * OTEL_BSP_* (the batch processor: its queue is bounded, OTEL_BSP_MAX_QUEUE_SIZE,
 * 2048 spans by default, and spans beyond it are dropped, so an exporter
 * that fails or hangs never grows memory nor delays a reply) and
 * OTEL_EXPORTER_OTLP_TIMEOUT / _COMPRESSION.
 */
import { context, DiagLogLevel, diag, propagation, trace } from "@opentelemetry/api";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { startMeter } from "./meter.js";
import { setGenAiInstruments } from "./metrics.js";

export interface SdkOptions {
  /** The OTLP/HTTP traces URL. */
  url: string;
  /** The OTLP/HTTP metrics URL (none: no metrics). */
  metricsUrl?: string;
  /** OTEL_METRIC_EXPORT_INTERVAL (ms). */
  metricIntervalMs?: number;
  protocol: "http/protobuf" | "http/json";
  /** OTEL_EXPORTER_OTLP_HEADERS: key=value pairs, comma-separated, values URL-encoded. */
  headers?: string;
  /** Where the SDK's own complaints go (an export that failed); warnings and errors only. */
  log?: { warn(obj: object, msg: string): void };
}

/** key=value,key2=value2 (values percent-decoded), as the OTLP exporter specification reads OTEL_EXPORTER_OTLP_HEADERS. */
export function parseHeaders(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (raw ?? "").split(",")) {
    const i = pair.indexOf("=");
    if (i <= 0) continue;
    const value = pair.slice(i + 1).trim();
    let decoded = value;
    try {
      decoded = decodeURIComponent(value);
    } catch {
      // Kept as written: a stray % is not worth refusing the start over.
    }
    out[pair.slice(0, i).trim()] = decoded;
  }
  return out;
}

/** Registers the tracer provider globally and starts the meter; `shutdown` flushes both within `timeoutMs` and unregisters everything it registered. */
export function startSdk(o: SdkOptions): { shutdown(timeoutMs: number): Promise<void> } {
  const headers = parseHeaders(o.headers);
  const exporterOptions = { url: o.url, headers };
  const exporter = o.protocol === "http/json" ? new JsonExporter(exporterOptions) : new ProtoExporter(exporterOptions);
  const resource = defaultResource()
    .merge(resourceFromAttributes({ "service.name": "switchboard" }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  if (o.log) {
    const log = o.log;
    const warn = (msg: string, ...args: unknown[]) =>
      log.warn({ detail: args.map((a) => (a instanceof Error ? a.message : String(a))).join(" ") }, `telemetry: ${msg}`);
    diag.setLogger({ error: warn, warn, info: () => undefined, debug: () => undefined, verbose: () => undefined }, DiagLogLevel.WARN);
  }
  provider.register();
  const meter = o.metricsUrl ? startMeter({ url: o.metricsUrl, protocol: o.protocol, headers, intervalMs: o.metricIntervalMs ?? 60_000, resource }) : undefined;
  return {
    async shutdown(timeoutMs) {
      setGenAiInstruments(undefined);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      });
      try {
        // Both flush at once (the meter exports its last figures), within the one bound.
        await Promise.race([Promise.all([provider.shutdown().catch(() => undefined), meter?.shutdown().catch(() => undefined)]), late]);
      } finally {
        clearTimeout(timer);
        trace.disable();
        context.disable();
        propagation.disable();
        diag.disable();
      }
    },
  };
}
