import type { z } from "zod";
import { bool, int, optionalString, url } from "./values.js";

/**
 * OpenTelemetry's standard variables (README "Telemetry"). Telemetry is on when
 * an OTLP endpoint is set and OTEL_SDK_DISABLED is not true. The gateway reads
 * the switch, the endpoint, the protocol and the headers from here; the SDK
 * reads the rest (service name, resource attributes, sampler, batch tuning)
 * from the environment itself. Each is validated here so a bad value stops the
 * start with the fix instead of a silent fallback inside the SDK.
 */
export const telemetrySettings = {
  OTEL_SDK_DISABLED: bool(false),
  OTEL_EXPORTER_OTLP_ENDPOINT: url("the OTLP/HTTP receiver's base URL, e.g. http://otel-collector:4318 (/v1/traces is added)"),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url("the OTLP/HTTP traces URL used as it is, e.g. http://otel-collector:4318/v1/traces"),
  OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: url("the OTLP/HTTP metrics URL used as it is, e.g. http://otel-collector:4318/v1/metrics"),
  /** How often the GenAI client metrics are exported (ms), as OpenTelemetry's periodic reader reads it. */
  OTEL_METRIC_EXPORT_INTERVAL: int(60_000, 100, 86_400_000),
  OTEL_EXPORTER_OTLP_PROTOCOL: optionalString().superRefine((v, ctx) => {
    if (v !== undefined && v !== "http/protobuf" && v !== "http/json")
      ctx.addIssue({ code: "custom", message: `must be http/protobuf (the default) or http/json; grpc is not supported (got "${v}")` });
  }) as z.ZodType<"http/protobuf" | "http/json" | undefined, string | undefined>,
  OTEL_EXPORTER_OTLP_HEADERS: optionalString().superRefine((v, ctx) => {
    if (v !== undefined && !v.split(",").every((kv) => /^\s*[^=\s]+\s*=.*$/.test(kv)))
      ctx.addIssue({ code: "custom", message: "must be comma-separated key=value pairs, e.g. authorization=Bearer%20<token>" });
  }),
  OTEL_SERVICE_NAME: optionalString(),
  OTEL_RESOURCE_ATTRIBUTES: optionalString(),
  OTEL_TRACES_SAMPLER: optionalString().superRefine((v, ctx) => {
    const known = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"];
    if (v !== undefined && !known.includes(v)) ctx.addIssue({ code: "custom", message: `must be one of ${known.join(", ")} (got "${v}")` });
  }),
  OTEL_TRACES_SAMPLER_ARG: optionalString().superRefine((v, ctx) => {
    if (v !== undefined && !(Number(v) >= 0 && Number(v) <= 1)) ctx.addIssue({ code: "custom", message: `must be a ratio from 0 to 1, e.g. 0.1 (got "${v}")` });
  }),
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: bool(false),
};
