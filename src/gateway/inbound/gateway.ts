import { AsyncLocalStorage } from "node:async_hooks";
import type { Config } from "../../config.js";
import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import type { RunHandle, Runner } from "../../runtime/runner.js";
import type { Registry } from "../../session/registry.js";
import type { IdentityStore } from "../../store/identities.js";
import type { InboundRecord, InboundStore } from "../../store/inbound.js";
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
import { Arrivals, handledWithoutTurn } from "./arrivals.js";
import { dispatch, type DispatchDeps } from "./dispatch.js";
import { UnadmittedGroups } from "./groups.js";
import { RecordsInFlight, recordArrival } from "./recording.js";
import { readRecorded, replayUnhandled, type RecordedDeps } from "./replay.js";
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

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref?.());

/** An adapter's batch while it records: the handling its events wait to start. */
interface OpenBatch {
  open: boolean;
  starts: Array<() => void>;
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
  /**
   * An adapter's batch (ctx.batch): events recorded inside it are handled once it ends. On Node 20 an
   * AsyncLocalStorage that has run turns on promise hooks for every promise in the process, which cost
   * Telegram polling about a tenth of its CPU per message (issue 31: 1.07 -> 0.96 ms, medians of 9
   * rounds): it is disabled whenever no batch is open, so the hooks are on only while one is.
   */
  readonly #batch = new AsyncLocalStorage<OpenBatch>();
  #openBatches = 0;
  readonly #arrivals: Arrivals;
  /** Groups the bot was not admitted to that spoke: logged once each, left with GROUP_UNADMITTED=leave. */
  readonly #unadmitted: UnadmittedGroups;
  #stopping = false;
  /** Handling waits for start() to finish, so events replayed from before a restart go first. */
  #gate: Promise<void> = Promise.resolve();
  /** Shared mode: conversations handled under database leases. */
  readonly #drainer: ConversationDrainer | undefined;
  constructor(readonly deps: GatewayDeps) {
    this.#arrivals = deps.arrivals ?? new Arrivals(deps.log);
    this.#unadmitted = new UnadmittedGroups(deps);
    if (deps.policy.SHARED_DATABASE && deps.leases && deps.processId) {
      this.#drainer = sharedModeDrainer(
        { ...deps, leases: deps.leases, processId: deps.processId },
        (rec) => this.#take(rec),
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
      await this.deps.outbound.queueUnsent();
      // Shared mode: events left by any process are found by the sweeper, under leases.
      if (!this.#shared) await replayUnhandled(this.#recordedDeps(), (env, rec) => this.#enqueue(env, rec.id, undefined, storedTrace(rec)));
      await this.#startAdapters();
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

  async #startAdapters(): Promise<void> {
    await Promise.all(
      this.adapters.map(async (a) => {
        try {
          await a.start(this.context(a));
          this.deps.adapters.rekey(a);
          this.deps.outbound.rekey(a);
        } catch (err) {
          this.deps.metrics.internalErrors.inc({ where: `${a.platform}:adapter-start` });
          this.deps.log.error(
            { platform: a.platform, err: errInfo(err) },
            "adapter failed to start; the gateway runs without it (/healthz?ready=1 answers 503 naming it)",
          );
        }
      }),
    );
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
  async batch<T>(fn: () => Promise<T>): Promise<T> {
    const batch: OpenBatch = { open: true, starts: [] };
    this.#openBatches++;
    try {
      return await this.#batch.run(batch, fn);
    } finally {
      // Disabling exits every context of the store, so only when no batch is open.
      if (--this.#openBatches === 0) this.#batch.disable();
      // Work the batch began that records after it ended starts at once, not into a list nobody runs.
      batch.open = false;
      for (const start of batch.starts) start();
    }
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
      const batch = this.#batch.getStore();
      if (batch?.open) batch.starts.push(start);
      else start();
      return settleInbound(span, { status: "accepted", inboundId: id });
    });
  }

  /**
   * Shared mode: takes one recorded event into this process's runner (under
   * the conversation's lease); the promise settles once it is committed.
   */
  async #take(rec: InboundRecord): Promise<{ done: Promise<unknown> } | undefined> {
    const env = await readRecorded(this.#recordedDeps(), rec);
    if (typeof env === "string") return undefined;
    if (!this.#arrivals.has(rec.id)) this.#arrivals.add(rec.id, env);
    // The trace the recording process started goes on here, whichever process recorded it.
    const trace = storedTrace(rec);
    const handle = await inContext(trace, () => this.#dispatch(env, rec.id, trace)).catch((err: unknown) => {
      this.#arrivals.forget(rec.id);
      throw err;
    });
    if (!handle || handle.accepted === "consumed" || handle.accepted === "context") this.#arrivals.handled(rec.id, handledWithoutTurn(handle));
    if (handle) {
      this.#watch(handle, env, rec.id);
      void handle.done.finally(() => this.#arrivals.forget(rec.id));
    }
    return handle ? { done: handle.done } : undefined;
  }

  #enqueue(env: InboundEnvelope, inboundId: string, after?: Promise<unknown>, trace?: TraceCarrier): void {
    this.#arrivals.add(inboundId, env);
    void this.#chats.run(chatKey(env), () => inContext(trace, () => this.#handle(env, inboundId, trace)), after);
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

  /**
   * Hands one event to the runner. If that fails (the store is failing), it
   * is retried here with bounded backoff, and the chat's later events wait
   * behind it (this runs in the chat's chain): order is kept. At the event's
   * INBOUND_TTL it is given up with a notice in its chat; while stopping it
   * stays unhandled and is replayed at the next start.
   */
  async #handle(env: InboundEnvelope, inboundId: string, trace?: TraceCarrier): Promise<void> {
    await this.#gate;
    const deadline = env.occurredAt.getTime() + this.deps.policy.INBOUND_TTL;
    for (let attempt = 1; ; attempt++) {
      try {
        const handle = await this.#dispatch(env, inboundId, trace);
        // Consumed and context-only events complete no turn: stop tracking them.
        if (!handle || handle.accepted === "consumed" || handle.accepted === "context") this.#arrivals.handled(inboundId, handledWithoutTurn(handle));
        // A message dropped by /stop or shutdown completes no turn either.
        else void handle.done.finally(() => this.#arrivals.forget(inboundId));
        if (handle) this.#watch(handle, env, inboundId);
        return;
      } catch (err) {
        this.deps.metrics.internalErrors.inc({ where: "inbound-handle" });
        const wait = Math.min(5000, 50 * 2 ** Math.min(attempt - 1, 10));
        if (this.#stopping) {
          this.#arrivals.forget(inboundId);
          this.deps.log.error(
            { platform: env.platform, inboundId, err: errInfo(err) },
            "could not handle an inbound event while stopping; it is replayed at the next start",
          );
          return;
        }
        if (Date.now() + wait >= deadline) {
          this.#arrivals.forget(inboundId);
          await this.#unanswered(env, inboundId, `could not be handled: ${String(errInfo(err).message ?? "error")}`);
          return;
        }
        this.deps.log[attempt >= 5 ? "error" : "warn"](
          { platform: env.platform, inboundId, attempt, retryInMs: wait, err: errInfo(err) },
          "could not handle an inbound event; retrying (its chat's later events wait)",
        );
        await sleep(wait);
      }
    }
  }

  /** A turn that could not be committed before the event's TTL: its chat is told. */
  #watch(handle: RunHandle, env: InboundEnvelope, inboundId: string): void {
    void handle.done.then((outcome) => {
      if (outcome !== "unanswered") return;
      this.#arrivals.forget(inboundId);
      return this.#unanswered(env, inboundId, "its turn could not be committed");
    });
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
