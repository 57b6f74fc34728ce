/**
 * The metrics half of the SDK (loaded with sdk.ts, only when telemetry is
 * on): a MeterProvider with one periodic reader exporting over OTLP/HTTP
 * (http/protobuf or http/json, as the traces), and the GenAI client
 * instruments with the bucket boundaries the semantic conventions advise.
 * The provider is not registered globally: only the gateway's instruments
 * record into it.
 */
import { OTLPMetricExporter as JsonMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPMetricExporter as ProtoMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto";
import type { Resource } from "@opentelemetry/resources";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { setGenAiInstruments } from "./metrics.js";

export interface MeterOptions {
  /** The OTLP/HTTP metrics URL. */
  url: string;
  protocol: "http/protobuf" | "http/json";
  headers: Record<string, string>;
  /** OTEL_METRIC_EXPORT_INTERVAL (ms). */
  intervalMs: number;
  resource: Resource;
}

/** gen_ai.client.token.usage: powers of 4 from 1 to 4^13 tokens. */
const TOKEN_BUCKETS = Array.from({ length: 14 }, (_, i) => 4 ** i);
/** gen_ai.client.operation.duration: 0.01 s doubling to 81.92 s. */
const DURATION_BUCKETS = Array.from({ length: 14 }, (_, i) => 0.01 * 2 ** i);

export function startMeter(o: MeterOptions): MeterProvider {
  const exporterOptions = { url: o.url, headers: o.headers };
  const exporter = o.protocol === "http/json" ? new JsonMetricExporter(exporterOptions) : new ProtoMetricExporter(exporterOptions);
  const reader = new PeriodicExportingMetricReader({
    exporter,
    exportIntervalMillis: o.intervalMs,
    exportTimeoutMillis: Math.min(30_000, o.intervalMs),
  });
  const provider = new MeterProvider({ resource: o.resource, readers: [reader] });
  const meter = provider.getMeter("switchboard");
  setGenAiInstruments({
    tokenUsage: meter.createHistogram("gen_ai.client.token.usage", {
      description: "Number of input and output tokens used per model call",
      unit: "{token}",
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    }),
    operationDuration: meter.createHistogram("gen_ai.client.operation.duration", {
      description: "Duration of a model call",
      unit: "s",
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    }),
  });
  return provider;
}
