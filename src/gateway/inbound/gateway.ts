import type { Config } from "../../config.js";
import type { Logger } from "../../log.js";
import type { RunHandle, Runner } from "../../runtime/runner.js";
import type { Registry } from "../../session/registry.js";
import type { IdentityStore } from "../../store/identities.js";
import type { InboundStore } from "../../store/inbound.js";
import type { KvStore } from "../../store/kv.js";
import type { LeaseStore } from "../../store/leases.js";
import type { Adapter, AdapterContext, ApprovalClickInput, InboundResult, SlackPorts } from "../adapter.js";
import type { AdapterRegistry } from "../adapters.js";
import type { InboundEnvelope } from "../contract.js";
import type { GatewayLedger } from "../ledger.js";
import type { GatewayMetrics } from "../metrics.js";
import type { Outbound } from "../outbound/outbound.js";
import { KeyedQueue } from "../../keyed-queue.js";
import { chatKey } from "../keys.js";
import type { Pairing } from "./pairing.js";
import { sharedModeDrainer, type ConversationDrainer } from "./conversation-drain.js";
import { adapterContext } from "./adapter-context.js";
import { Arrivals } from "./arrivals.js";
import { AdapterBatches } from "./adapter-batches.js";
import { startAdapters } from "./adapter-start.js";
import { dispatch, type DispatchDeps } from "./dispatch.js";
import { UnadmittedGroups } from "./groups.js";
import { RecordsInFlight, recordArrival } from "./recording.js";
import { handleInbound, takeRecorded, type HandlingDeps } from "./handling.js";
import { replayUnhandled, type RecordedDeps } from "./replay.js";
import { readAtStart } from "./start-reads.js";
import { noticeUnanswered } from "./unanswered.js";
import { inContext, type TraceCarrier } from "../../telemetry/index.js";
import { inboundSpan, settleInbound, storedTrace } from "./trace.js";

export type GatewayPolicy = Pick<
  Config,
  | "INBOUND_TTL"
  | "DM_POLICY"
  | "ALLOW_FROM"
  | "ADMIN_USERS"
  | "GROUP_POLICY"
  | "ALLOW_GROUPS"
  | "GROUP_UNADMITTED"
  | "GROUP_REQUIRE_MENTION"
  | "THREAD_SESSIONS"
  | "MAX_INBOUND_CHARS"
  | "SHARED_DATABASE"
>;

export interface GatewayDeps {
  policy: GatewayPolicy;
  adapters: AdapterRegistry;
  registry: Registry;
  identities: IdentityStore;
  inbound: InboundStore;
  kv: KvStore;
  runner: Runner;
  ledger: GatewayLedger;
  outbound: Outbound;
  pairing: Pairing;
  metrics: GatewayMetrics;
  log: Logger;
  route: AdapterContext["route"];
  commands: ReadonlyArray<{ name: string; description: string }>;
  /** Every chat command name and alias, operator-only ones included (for umbrella commands such as Slack's /switchboard). */
  commandNames?: ReadonlyArray<string>;
  /** Clicks on approval cards (src/runtime/approvals). */
  onApprovalClick?: (click: ApprovalClickInput & { platform: string; botId: string; isAdmin: boolean }) => Promise<{ ok: boolean; text: string }>;
  /** With SHARED_DATABASE: conversation leases, and this process's id as their owner. */
  leases?: LeaseStore;
  processId?: string;
  /** Told of every conversation a message is handled in, so proactive messages can reach it later (src/gateway/proactive). */
  conversations?: { seen(env: InboundEnvelope, bindingKey: string): void };
  /** The in-flight events, shared with the runner's commit deadline (when each happened); else the gateway's own. */
  arrivals?: Arrivals;
  /** The Slack app's installations, handed to the adapters (AdapterContext.slack). */
  slack?: SlackPorts;
  /** AGENTS_CONFIG's routes: the agent of each place. */
  agents?: DispatchDeps["agents"];
}

/**
 * The inbound pipeline: record -> access policy -> identity -> binding ->
 * runner, and recovery after a restart. Events of one chat are handled in
 * arrival order; different chats run concurrently.
 */
export class Gateway {
  get adapters(): readonly Adapter[] {
    return this.deps.adapters.list();
  }
  /** Events of one chat are handled one at a time, in arrival order. */
  readonly #chats = new KeyedQueue();
  readonly #recording = new RecordsInFlight();
  /** Adapters' batches (ctx.batch): events recorded inside one are handled once it ends. */
  readonly #batches = new AdapterBatches();
  readonly #arrivals: Arrivals;
  /** Groups the bot was not admitted to that spoke: logged once each, left with GROUP_UNADMITTED=leave. */
  readonly #unadmitted: UnadmittedGroups;
  #stopping = false;
  /** Handling waits for start() to finish, so events replayed from before a restart go first. */
  #gate: Promise<void> = Promise.resolve();
  /** Shared mode: conversations handled under database leases. */
  readonly #drainer: ConversationDrainer | undefined;
  /** Handing recorded events to the runner (handling.ts). */
  readonly #handling: HandlingDeps;
  constructor(readonly deps: GatewayDeps) {
    this.#arrivals = deps.arrivals ?? new Arrivals(deps.log);
    this.#unadmitted = new UnadmittedGroups(deps);
    this.#handling = {
      policy: deps.policy,
      metrics: deps.metrics,
      log: deps.log,
      arrivals: this.#arrivals,
      gate: () => this.#gate,
      stopping: () => this.#stopping,
      recordedDeps: () => this.#recordedDeps(),
      dispatch: (env, inboundId, trace) => this.#dispatch(env, inboundId, trace),
      unanswered: (env, inboundId, why) => this.#unanswered(env, inboundId, why),
    };
    if (deps.policy.SHARED_DATABASE && deps.leases && deps.processId) {
      this.#drainer = sharedModeDrainer(
        { ...deps, leases: deps.leases, processId: deps.processId },
        (rec) => takeRecorded(this.#handling, rec),
        () => this.#stopping,
      );
    }
    this.#arrivals.observeTurns(deps.runner, deps.metrics);
  }

  context(adapter: Adapter): AdapterContext {
    return adapterContext(adapter, this.deps, { inbound: (env) => this.inbound(env), batch: (fn) => this.batch(fn) });
  }

  /**
   * Queues what a previous run left unfinished (unsent replies, unhandled
   * events), then starts every adapter. The recovered work is queued first,
   * so in each chat it goes out before anything new. An adapter that fails to
   * start is logged and reported down; the rest carry on.
   */
  async start(): Promise<void> {
    let open!: () => void;
    this.#gate = new Promise((r) => (open = r));
    this.#drainer?.start(this.#gate);
    this.deps.outbound.hold();
    try {
      await readAtStart("unsent replies", () => this.deps.outbound.queueUnsent(), this.deps.log);
      // Shared mode: events left by any process are found by the sweeper, under leases.
      if (!this.#shared) {
        // A retry reads the pages again from the first: an event already queued by an earlier try is not queued twice.
        const queued = new Set<string>();
        const replay = () =>
          replayUnhandled(this.#recordedDeps(), (env, rec) => {
            if (queued.has(rec.id)) return;
            queued.add(rec.id);
            this.#enqueue(env, rec.id, undefined, storedTrace(rec));
          });
        await readAtStart("unhandled events", replay, this.deps.log);
      }
      await startAdapters(this.deps, (a) => this.context(a));
    } finally {
      open();
      this.deps.outbound.release();
    }
  }

  get #shared(): boolean {
    return this.#drainer !== undefined;
  }

  #adapterFor(env: InboundEnvelope): Adapter | undefined {
    return this.deps.adapters.get(env.platform, env.botId);
  }

  #unanswered(env: InboundEnvelope, inboundId: string, why: string): Promise<void> {
    return noticeUnanswered(this.deps, env, inboundId, why);
  }

  #recordedDeps(): RecordedDeps {
    return { ...this.deps, inboundTtlMs: this.deps.policy.INBOUND_TTL, unanswered: (env, id, why) => this.#unanswered(env, id, why) };
  }

  /**
   * Events recorded inside `fn` (a getUpdates batch, a channel's backlog)
   * arrived together: their handling starts once `fn` settles, so a `/new`
   * among them cannot rotate the session before the rest are recorded.
   */
  batch<T>(fn: () => Promise<T>): Promise<T> {
    return this.#batches.run(fn);
  }

  /**
   * Records the event (the adapter may acknowledge once this resolves) and queues its handling. Each message
   * starts its own trace here (src/telemetry): its root span covers the recording, and its carrier goes with
   * the event to the turn.
   */
  inbound(incoming: InboundEnvelope): Promise<InboundResult> {
    return inboundSpan(incoming, async (span) => {
      const arrival = await recordArrival(this.deps, this.#recording, incoming);
      if ("refused" in arrival) return settleInbound(span, arrival.refused);
      const { env, conversation, id, trace } = arrival;
      const start = this.#drainer
        ? () => {
            this.#arrivals.add(id, env);
            this.#drainer!.kick(conversation);
          }
        : () => this.#enqueue(env, id, this.#recording.earlier(conversation), trace);
      this.#batches.start(start);
      return settleInbound(span, { status: "accepted", inboundId: id });
    });
  }

  #enqueue(env: InboundEnvelope, inboundId: string, after?: Promise<unknown>, trace?: TraceCarrier): void {
    this.#arrivals.add(inboundId, env);
    void this.#chats.run(chatKey(env), () => inContext(trace, () => handleInbound(this.#handling, env, inboundId, trace)), after);
  }

  /** Sizes of the per-chat state, for tests and diagnostics: idle, every one is back to its resting size. */
  stats(): { chains: number; arrivals: number; recording: number; bindings: number } {
    return { chains: this.#chats.size, arrivals: this.#arrivals.size, recording: this.#recording.size, bindings: this.deps.runner.stats().bindings };
  }

  /** Waits until every queued event has been taken by the runner. */
  async idle(): Promise<void> {
    await this.#chats.idle();
    await this.#drainer?.idle();
  }

  /** What dispatch reads, built once: every part is fixed at construction, and the state it asks after is read through the closures. */
  #dispatchDeps: DispatchDeps | undefined;

  #dispatch(env: InboundEnvelope, inboundId: string, trace?: TraceCarrier): Promise<RunHandle | undefined> {
    this.#dispatchDeps ??= {
      ...this.deps,
      shared: this.#shared,
      unadmitted: this.#unadmitted,
      stopping: () => this.#stopping,
      adapterFor: (e) => this.#adapterFor(e),
      handled: (id, outcome) => this.#arrivals.handled(id, outcome),
    };
    return dispatch(this.#dispatchDeps, env, inboundId, trace);
  }

  /**
   * Graceful stop, first step: no event is handed to the runner from now on
   * (one still arriving is recorded and answered after the restart), and the
   * adapters that can stop receiving while still sending do so.
   */
  async stopIntake(): Promise<void> {
    this.#stopping = true;
    this.#drainer?.stop();
    await Promise.allSettled(this.adapters.map((a) => a.stopIntake?.()));
  }

  /** Stops adapters (they drain), then waits for queued handling and replies (at most `outboundWaitMs`, if given). */
  async stop(outboundWaitMs?: number): Promise<void> {
    this.#stopping = true;
    this.#drainer?.stop();
    await Promise.allSettled(this.adapters.map((a) => a.stop()));
    await this.idle();
    if (outboundWaitMs === undefined) await this.deps.outbound.drain();
    else await this.deps.outbound.settle(outboundWaitMs);
  }
}
