import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** The gateway's Prometheus metrics, on a registry of its own (one per gateway instance). */
export class GatewayMetrics {
  readonly registry = new Registry();
  readonly inbound = new Counter({
    name: "switchboard_inbound_total",
    help: "Inbound platform events by outcome.",
    labelNames: ["platform", "outcome"] as const,
    registers: [this.registry],
  });
  readonly duplicates = new Counter({
    name: "switchboard_duplicates_dropped_total",
    help: "Inbound events dropped as duplicates (retries, redeliveries, replays).",
    labelNames: ["platform"] as const,
    registers: [this.registry],
  });
  readonly expired = new Counter({
    name: "switchboard_expired_total",
    help: "Inbound events and replies dropped because they were older than INBOUND_TTL.",
    labelNames: ["platform", "what"] as const,
    registers: [this.registry],
  });
  readonly outbound = new Counter({
    name: "switchboard_outbound_total",
    help: "Outbound platform calls by kind and outcome.",
    labelNames: ["platform", "call", "outcome"] as const,
    registers: [this.registry],
  });
  readonly rateLimited = new Counter({
    name: "switchboard_rate_limited_total",
    help: "429 answers received from platforms.",
    labelNames: ["platform"] as const,
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: "switchboard_outbound_queue_depth",
    help: "Outbound calls queued or running.",
    labelNames: ["platform"] as const,
    registers: [this.registry],
  });
  readonly turnLatency = new Histogram({
    name: "switchboard_turn_latency_seconds",
    help: "From an inbound event's arrival to its reply being committed.",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly httpRefused = new Counter({
    name: "switchboard_http_refused_total",
    help: "HTTP requests and connections refused at the edge, by reason (malformed, timeout, body-too-large, body-budget, connections, host, auth, origin, login).",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  readonly httpErrors = new Counter({
    name: "switchboard_http_errors_total",
    help: "HTTP requests whose handler failed (answered 500).",
    registers: [this.registry],
  });
  readonly httpConnections = new Gauge({ name: "switchboard_http_connections", help: "Open HTTP connections.", registers: [this.registry] });
  readonly httpBufferedBytes = new Gauge({
    name: "switchboard_http_buffered_body_bytes",
    help: "Request-body bytes held in memory across connections.",
    registers: [this.registry],
  });
  readonly recordsPruned = new Counter({
    name: "switchboard_records_pruned_total",
    help: "Inbound and delivery records deleted after RECORD_RETENTION.",
    labelNames: ["table"] as const,
    registers: [this.registry],
  });
  readonly approvals = new Counter({
    name: "switchboard_tool_approvals_total",
    help: "Tool-call approvals by outcome (approved, denied, expired, cancelled, refused: a click by someone not allowed).",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly internalErrors = new Counter({
    name: "switchboard_internal_errors_total",
    help: "Errors caught on a correctness path (store calls, lease renewals, normalizers, the sent log), by where they were caught. Each is also logged.",
    labelNames: ["where"] as const,
    registers: [this.registry],
  });
  readonly mediaFailures = new Counter({
    name: "switchboard_media_failures_total",
    help: "Attachments that could not be used (an image for the model, audio to transcribe), by kind and code (TooLarge, WrongType, NotFound, Refused, Timeout, Failed, transcribe-*). Each is also logged.",
    labelNames: ["kind", "code"] as const,
    registers: [this.registry],
  });
  readonly storeFailures = new Counter({
    name: "switchboard_store_failures_total",
    help: "Store calls that failed, by call site (op) and error code.",
    labelNames: ["op", "code"] as const,
    registers: [this.registry],
  });
  readonly unanswered = new Counter({
    name: "switchboard_unanswered_total",
    help: "Accepted events that reached INBOUND_TTL without an answer; the chat got a notice to send them again.",
    labelNames: ["platform"] as const,
    registers: [this.registry],
  });
  readonly adapterUp = new Gauge({
    name: "switchboard_adapter_up",
    help: "1 when the adapter is ready, 0 when it is down.",
    labelNames: ["platform", "bot"] as const,
    registers: [this.registry],
  });

  constructor(opts: { processMetrics?: boolean } = {}) {
    if (opts.processMetrics) collectDefaultMetrics({ register: this.registry, prefix: "switchboard_" });
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
