import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** Declares metrics on one registry: a name, its help text and, for a counter or gauge, its label names. */
function metricsOn(registry: Registry) {
  return {
    counter: <L extends string = never>(name: string, help: string, labelNames: readonly L[] = []) =>
      new Counter<L>({ name, help, labelNames, registers: [registry] }),
    gauge: <L extends string = never>(name: string, help: string, labelNames: readonly L[] = []) =>
      new Gauge<L>({ name, help, labelNames, registers: [registry] }),
    histogram: (name: string, help: string, buckets: number[]) => new Histogram({ name, help, buckets, registers: [registry] }),
  };
}

/** How many workspaces /metrics names; the rest are counted together as "other". */
export const WORKSPACE_LABELS = 50;

/** How many model names /metrics names; the rest are counted together as "other" (a /model choice must not grow the label set without end). */
export const MODEL_LABELS = 20;

/** The gateway's Prometheus metrics, on a registry of its own (one per gateway instance). */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly define = metricsOn(this.registry);
  readonly inbound = this.define.counter("switchboard_inbound_total", "Inbound platform events by outcome.", ["platform", "outcome"]);
  readonly groupsUnadmitted = this.define.counter(
    "switchboard_group_unadmitted_total",
    "Messages in groups the bot was not admitted to (GROUP_POLICY), never answered; outcome: silent, left (the bot left the group) or leave-failed.",
    ["platform", "outcome"],
  );
  readonly duplicates = this.define.counter("switchboard_duplicates_dropped_total", "Inbound events dropped as duplicates (retries, redeliveries, replays).", [
    "platform",
  ]);
  readonly expired = this.define.counter("switchboard_expired_total", "Inbound events and replies dropped because they were older than INBOUND_TTL.", [
    "platform",
    "what",
  ]);
  readonly outbound = this.define.counter("switchboard_outbound_total", "Outbound platform calls by kind and outcome.", ["platform", "call", "outcome"]);
  /** Messages and failed replies per platform workspace (a Slack team): the first WORKSPACE_LABELS workspaces by name, the rest as "other". */
  readonly workspaceMessages = this.define.counter(
    "switchboard_workspace_messages_total",
    'Inbound messages accepted, by platform workspace (a Slack team, a Discord guild; past 50 workspaces, "other").',
    ["platform", "workspace"],
  );
  readonly workspaceFailures = this.define.counter(
    "switchboard_workspace_failures_total",
    'Replies the platform refused for good (failed deliveries), by platform workspace (past 50 workspaces, "other").',
    ["platform", "workspace"],
  );
  readonly #workspaces = new Set<string>();
  /** The label of a workspace: its id for the first 50 seen, "other" after, so the label set stays bounded. */
  workspaceLabel(platform: string, workspace: string): string {
    const key = `${platform}:${workspace}`;
    if (this.#workspaces.has(key)) return workspace;
    if (this.#workspaces.size >= WORKSPACE_LABELS) return "other";
    this.#workspaces.add(key);
    return workspace;
  }
  readonly rateLimited = this.define.counter("switchboard_rate_limited_total", "429 answers received from platforms.", ["platform"]);
  readonly queueDepth = this.define.gauge("switchboard_outbound_queue_depth", "Outbound calls queued or running.", ["platform"]);
  readonly turnLatency = this.define.histogram(
    "switchboard_turn_latency_seconds",
    "From an inbound event's arrival to its reply being committed.",
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  );
  readonly httpRefused = this.define.counter(
    "switchboard_http_refused_total",
    "HTTP requests and connections refused at the edge, by reason (malformed, timeout, body-too-large, body-budget, connections, host, auth, origin, login).",
    ["reason"],
  );
  readonly httpErrors = this.define.counter("switchboard_http_errors_total", "HTTP requests whose handler failed (answered 500).");
  readonly httpConnections = this.define.gauge("switchboard_http_connections", "Open HTTP connections.");
  readonly httpBufferedBytes = this.define.gauge("switchboard_http_buffered_body_bytes", "Request-body bytes held in memory across connections.");
  readonly recordsPruned = this.define.counter("switchboard_records_pruned_total", "Inbound and delivery records deleted after RECORD_RETENTION.", ["table"]);
  readonly approvals = this.define.counter(
    "switchboard_tool_approvals_total",
    "Tool-call approvals by outcome (approved, denied, expired, cancelled, refused: a click by someone not allowed; too_long: arguments too long to show a person, denied without a card).",
    ["outcome"],
  );
  readonly internalErrors = this.define.counter(
    "switchboard_internal_errors_total",
    "Errors caught on a correctness path (store calls, lease renewals, normalizers, the sent log), by where they were caught. Each is also logged.",
    ["where"],
  );
  readonly sendTokensStale = this.define.counter(
    "switchboard_send_budget_stale_tokens_total",
    "Tokens of the bot-wide send budget (shared mode) dropped unused because the process stalled past their time, by platform: sent late, they would have pushed the bot past its limit.",
    ["platform"],
  );
  readonly mediaFailures = this.define.counter(
    "switchboard_media_failures_total",
    "Attachments that could not be used (an image for the model, audio to transcribe), by kind and code (TooLarge, WrongType, NotFound, Refused, Timeout, Failed, transcribe-*). Each is also logged.",
    ["kind", "code"],
  );
  readonly storeFailures = this.define.counter("switchboard_store_failures_total", "Store calls that failed, by call site (op) and error code.", [
    "op",
    "code",
  ]);
  readonly unanswered = this.define.counter(
    "switchboard_unanswered_total",
    "Accepted events that reached INBOUND_TTL without an answer; the chat got a notice to send them again.",
    ["platform"],
  );
  /** Model usage (issue 29): agents and budgets are the configuration's (bounded); models are capped at MODEL_LABELS. */
  readonly modelTokens = this.define.counter(
    "switchboard_model_tokens_total",
    'Model tokens used, by agent, model (past 20 models, "other") and type (prompt, completion, cached: cached prompt tokens, also counted in prompt).',
    ["agent", "model", "type"],
  );
  readonly modelCost = this.define.counter(
    "switchboard_model_cost_total",
    'Model cost in the price table\'s currency, by agent and model (past 20 models, "other"); models with no price add nothing.',
    ["agent", "model"],
  );
  readonly budgetRefusals = this.define.counter(
    "switchboard_budget_refusals_total",
    "Model calls refused before they were made because a budget was used up, by budget (its AGENTS_CONFIG name, e.g. user/day/tokens).",
    ["budget"],
  );
  readonly budgetSwept = this.define.counter(
    "switchboard_budget_reservations_swept_total",
    "Budget reservations past their expiry (a process died or failed to settle mid-call) settled by the sweep at their reserved amount.",
  );
  readonly #models = new Set<string>();
  /** The label of a model: its name for the first MODEL_LABELS seen, "other" after. */
  modelLabel(model: string): string {
    if (this.#models.has(model)) return model;
    if (this.#models.size >= MODEL_LABELS) return "other";
    this.#models.add(model);
    return model;
  }
  readonly adapterUp = this.define.gauge("switchboard_adapter_up", "1 when the adapter is ready, 0 when it is down.", ["platform", "bot"]);

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
