import { AsyncLocalStorage } from "node:async_hooks";
import type { Config } from "../config.js";
import type { Logger } from "../log.js";
import type { InEvent } from "../runtime/events.js";
import { setBounded } from "../bounded.js";
import { errInfo } from "../log.js";
import type { RunHandle, Runner } from "../runtime/runner.js";
import { renderUserText } from "../runtime/pending.js";
import type { Registry } from "../session/registry.js";
import type { Info } from "../session/info.js";
import type { IdentityStore } from "../store/identities.js";
import type { InboundRecord, InboundStore } from "../store/inbound.js";
import type { KvStore } from "../store/kv.js";
import type { LeaseStore } from "../store/leases.js";
import type { Adapter, AdapterContext, ApprovalClickInput, HttpHandler, InboundResult } from "./adapter.js";
import type { InboundEnvelope } from "./contract.js";
import type { GatewayLedger } from "./ledger.js";
import type { GatewayMetrics } from "./metrics.js";
import { adapterKey, type Outbound } from "./outbound.js";
import type { Pairing } from "./pairing.js";
import { ConversationDrainer } from "./conversation-drain.js";
import { ReplyTracker } from "./reply-tracker.js";
import { answersInGroup, listed } from "./policy.js";

export type GatewayPolicy = Pick<
  Config,
  "INBOUND_TTL" | "DM_POLICY" | "ALLOW_FROM" | "ADMIN_USERS" | "GROUP_REQUIRE_MENTION" | "THREAD_SESSIONS" | "MAX_INBOUND_CHARS" | "SHARED_DATABASE"
>;

export interface GatewayDeps {
  policy: GatewayPolicy;
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
}



interface Arrival {
  at: number;
  platform: string;
  chatKind: InboundEnvelope["chatKind"];
}

const arrival = (env: InboundEnvelope): Arrival => ({ at: performance.now(), platform: env.platform, chatKind: env.chatKind });

/** How a message that started no agent turn ended: a command, context kept in a group, or a reply of the access policy. */
const handledWithoutTurn = (handle: RunHandle | undefined): string => (handle ? (handle.accepted === "consumed" ? "command" : "context") : "policy");

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref?.());

/** Unhandled events read per page when replaying at start. */
const REPLAY_PAGE = 1000;

/** The per-chat binding cache stays bounded; a miss re-reads the binding. */
const CHAT_CACHE_LIMIT = 50_000;

/** Envelope JSON revived (dates), for replaying a recorded event after a restart. */
function revive(json: string): InboundEnvelope {
  return JSON.parse(json, (k, v) => (k === "occurredAt" && typeof v === "string" ? new Date(v) : v));
}

/**
 * The inbound pipeline: record -> access policy -> identity -> binding ->
 * runner, and recovery after a restart. Events of one chat are handled in
 * arrival order; different chats run concurrently.
 */
export class Gateway {
  readonly adapters: Adapter[] = [];
  readonly #chains = new Map<string, Promise<void>>();
  readonly #bindings = new Map<string, string>();
  /**
   * Records in flight per conversation: an event's handling waits for the
   * records that started before it, so events delivered at once (concurrent
   * webhooks) are all recorded before the first of them can rotate the
   * session (see the arrival stamps in RotateInput.stampInbound).
   */
  readonly #recording = new Map<string, Set<Promise<unknown>>>();
  /** An adapter's batch (ctx.batch): events recorded inside it are handled once it ends. */
  readonly #batch = new AsyncLocalStorage<Array<() => void>>();
  readonly #pendingHandles = new Set<Promise<unknown>>();
  /** Each in-flight inbound event: when it arrived and where from, for the turn latency metric and its log line. */
  readonly #arrivals = new Map<string, Arrival>();
  #stopping = false;
  /** Handling waits for start() to finish, so events replayed from before a restart go first. */
  #gate: Promise<void> = Promise.resolve();
  /** Shared mode: conversations handled under database leases. */
  readonly #drainer: ConversationDrainer | undefined;
  constructor(readonly deps: GatewayDeps) {
    if (deps.policy.SHARED_DATABASE && deps.leases && deps.processId) {
      const replies = new ReplyTracker(deps.runner, deps.outbound.opts.deliveries, deps.log, () => this.#stopping, (where) => deps.metrics.internalErrors.inc({ where }));
      this.#drainer = new ConversationDrainer({
        inbound: deps.inbound, leases: deps.leases, processId: deps.processId, log: deps.log,
        take: (rec) => this.#take(rec),
        flushed: (ids) => replies.flushed(ids),
        onError: (where) => deps.metrics.internalErrors.inc({ where }),
      });
    }
    // Rotations and switches move a conversation: forget its cached binding.
    deps.runner.withSink(["lifecycle", "turn-complete"], (_id, e) => {
      if (e.kind === "turn-complete") {
        for (const id of e.inboundIds ?? (e.inboundId ? [e.inboundId] : [])) {
          const a = this.#arrivals.get(id);
          if (a !== undefined && e.outcome !== "fenced") deps.metrics.turnLatency.observe((performance.now() - a.at) / 1000);
          this.#handled(id, e.outcome);
        }
      }
      if (e.kind === "lifecycle" && (e.phase === "rotated" || e.phase === "switched")) {
        const prev = String(e.detail?.previousId ?? "");
        for (const [k, v] of this.#bindings) if (v === prev) this.#bindings.set(k, e.sessionId);
      }
    });
  }

  add(adapter: Adapter): void {
    this.adapters.push(adapter);
    this.deps.outbound.add(adapter);
  }

  context(adapter: Adapter): AdapterContext {
    return {
      inbound: (env) => this.inbound(env),
      batch: (fn) => this.batch(fn),
      route: this.deps.route,
      kv: { get: (k) => this.deps.kv.get(k), set: (k, v) => this.deps.kv.set(k, v) },
      commands: this.deps.commands,
      commandNames: this.deps.commandNames ?? this.deps.commands.map((c) => c.name),
      dropped: (reason) => this.deps.metrics.inbound.inc({ platform: adapter.platform, outcome: reason }),
      chatMigrated: async (from, to) => {
        const groupId = await this.deps.identities.moveGroup(adapter.platform, from, to);
        if (groupId) this.deps.log.info({ platform: adapter.platform, groupId }, "a group moved to a new chat id (supergroup upgrade); its sessions follow it");
      },
      log: this.deps.log.child({ platform: adapter.platform }),
      reportError: (where) => this.deps.metrics.internalErrors.inc({ where: `${adapter.platform}:${where}` }),
      approvalClick: async (c) =>
        this.deps.onApprovalClick?.({ ...c, platform: adapter.platform, botId: adapter.botId, isAdmin: listed(this.deps.policy.ADMIN_USERS, { platform: adapter.platform, senderId: c.senderId }) }) ??
        { ok: false, text: "Approvals are not enabled here." },
    };
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
      if (!this.#shared) await this.#replay();
      await this.#startAdapters();
    } finally {
      open();
      this.deps.outbound.release();
    }
  }

  get #shared(): boolean {
    return this.#drainer !== undefined;
  }

  /** The ordering key of a conversation: the thread counts only when threads have sessions of their own. */
  #conversationKey(env: InboundEnvelope): string {
    const thread = env.chatKind === "thread" && this.deps.policy.THREAD_SESSIONS === "own" ? (env.threadId ?? "") : "";
    return `${env.platform}:${env.botId}:${env.chatId}:${thread}`;
  }

  async #startAdapters(): Promise<void> {
    await Promise.all(
      this.adapters.map(async (a) => {
        try {
          await a.start(this.context(a));
          this.deps.outbound.rekey(a);
        } catch (err) {
          this.deps.metrics.internalErrors.inc({ where: `${a.platform}:adapter-start` });
          this.deps.log.error({ platform: a.platform, err: errInfo(err) }, "adapter failed to start; the gateway runs without it (/healthz?ready=1 answers 503 naming it)");
        }
      }),
    );
  }

  /**
   * Accepted events that were never handled are handled now, or expired if
   * they are older than INBOUND_TTL (never answered late).
   */
  async #replay(): Promise<{ replayed: number; expired: number }> {
    let replayed = 0;
    let expired = 0;
    // Every page, in recorded order: each chat's chain gets its events in the order they were recorded.
    for (let after = 0; ; ) {
      const page = await this.deps.inbound.unhandled(REPLAY_PAGE, after);
      for (const rec of page) {
        const env = await this.#recorded(rec);
        if (env === "expired") expired++;
        if (typeof env === "string") continue;
        this.#enqueue(env, rec.id, rec.occurredAt.getTime());
        replayed++;
      }
      if (page.length < REPLAY_PAGE) break;
      after = page[page.length - 1]!.seq;
    }
    if (replayed || expired) this.deps.log.info({ replayed, expired }, "recovered events from before the restart");
    return { replayed, expired };
  }

  /**
   * A recorded, still unhandled event ready to handle again, or why not:
   * expired events are marked (never answered late), unreadable ones ignored.
   */
  async #recorded(rec: InboundRecord): Promise<InboundEnvelope | "expired" | "unreadable"> {
    let env: InboundEnvelope;
    try {
      env = revive(rec.envelope);
    } catch (err) {
      this.deps.metrics.internalErrors.inc({ where: "inbound-envelope" });
      this.deps.log.error({ inboundId: rec.id, platform: rec.platform, err: errInfo(err) }, "a recorded event could not be read back; it is not answered");
      await this.deps.inbound.mark(rec.id, "ignored", "unreadable envelope");
      return "unreadable";
    }
    if (Date.now() - rec.occurredAt.getTime() > this.deps.policy.INBOUND_TTL) {
      // Accepted (acknowledged to the platform) and never answered: say so in its chat, never silence.
      await this.#unanswered(env, rec.id, "expired before it was handled");
      return "expired";
    }
    return env;
  }

  /**
   * An accepted event that reached INBOUND_TTL without an answer: marked
   * expired (never answered late), counted, logged, and its chat gets a
   * short notice to send it again. The notice goes through a delivery record
   * when the store takes it, else straight to the platform (best effort).
   */
  async #unanswered(env: InboundEnvelope, inboundId: string, why: string): Promise<void> {
    const { metrics, log } = this.deps;
    metrics.expired.inc({ platform: env.platform, what: "inbound" });
    metrics.unanswered.inc({ platform: env.platform });
    log.error({ platform: env.platform, inboundId, chatId: env.chatId, occurredAt: env.occurredAt.toISOString(), why }, "an accepted event reached INBOUND_TTL unanswered; its chat is asked to send it again");
    const at = env.occurredAt.toISOString().slice(11, 16);
    const text = `I couldn't answer your message from ${at} UTC; please send it again.`;
    try {
      await this.deps.inbound.mark(inboundId, "expired", why);
      // Not keyed to the inbound's TTL (that has passed): the notice gets a TTL of its own.
      const r = await this.deps.ledger.commit({ sessionId: "", inboundIds: [], messages: [], turnIncrement: 0, replies: [{ replyTo: env.replyTo, text, kind: "notice", severity: "warn" }] });
      for (const id of r.deliveryIds) await this.deps.outbound.deliverId(id);
    } catch (err) {
      metrics.internalErrors.inc({ where: "unanswered-notice" });
      log.error({ inboundId, err: errInfo(err) }, "the store could not record the unanswered notice; sending it straight to the platform");
      const adapter = this.adapters.find((a) => adapterKey(a.platform, a.botId) === adapterKey(env.platform, env.botId));
      await adapter?.sink.send(env.replyTo, text).catch((e: unknown) => {
        metrics.internalErrors.inc({ where: "unanswered-notice-send" });
        log.error({ inboundId, err: errInfo(e) }, "the unanswered notice could not be sent either");
      });
    }
  }

  /**
   * Events recorded inside `fn` (a getUpdates batch, a channel's backlog)
   * arrived together: their handling starts once `fn` settles, so a `/new`
   * among them cannot rotate the session before the rest are recorded.
   */
  async batch<T>(fn: () => Promise<T>): Promise<T> {
    const deferred: Array<() => void> = [];
    try {
      return await this.#batch.run(deferred, fn);
    } finally {
      for (const start of deferred) start();
    }
  }

  /** Records the event (the adapter may acknowledge once this resolves) and queues its handling. */
  async inbound(incoming: InboundEnvelope): Promise<InboundResult> {
    const { metrics, policy } = this.deps;
    // PostgreSQL text cannot hold NUL; no chat platform means one. Drop it at the edge.
    const clean = incoming.text.includes("\u0000") ? { ...incoming, text: incoming.text.replace(/\u0000/g, "") } : incoming;
    // Only MAX_INBOUND_CHARS are ever stored; the original length is kept for the "too long" reply.
    const env = clean.text.length > policy.MAX_INBOUND_CHARS ? { ...clean, text: cutText(clean.text, policy.MAX_INBOUND_CHARS), textLength: clean.text.length } : clean;
    if (env.senderIsBot) {
      metrics.inbound.inc({ platform: env.platform, outcome: "ignored" });
      return { status: "ignored", reason: "sent by a bot" };
    }
    const age = Date.now() - env.occurredAt.getTime();
    const expired = age > policy.INBOUND_TTL;
    const conversation = this.#conversationKey(env);
    const recording = this.deps.inbound.record({
      conversation,
      platform: env.platform,
      botId: env.botId,
      eventId: env.eventId,
      envelope: JSON.stringify(env),
      occurredAt: env.occurredAt,
      ...(expired ? { status: "expired" as const, note: `arrived ${Math.round(age / 1000)} s late` } : {}),
    });
    const inFlight = this.#recording.get(conversation) ?? new Set<Promise<unknown>>();
    this.#recording.set(conversation, inFlight);
    inFlight.add(recording);
    let rec: Awaited<typeof recording>;
    try {
      rec = await recording;
    } finally {
      inFlight.delete(recording);
      if (inFlight.size === 0 && this.#recording.get(conversation) === inFlight) this.#recording.delete(conversation);
    }
    if (rec === "duplicate") {
      metrics.duplicates.inc({ platform: env.platform });
      metrics.inbound.inc({ platform: env.platform, outcome: "duplicate" });
      return { status: "duplicate" };
    }
    if (expired) {
      metrics.expired.inc({ platform: env.platform, what: "inbound" });
      metrics.inbound.inc({ platform: env.platform, outcome: "expired" });
      return { status: "expired" };
    }
    metrics.inbound.inc({ platform: env.platform, outcome: "accepted" });
    const id = rec.id;
    const start = this.#drainer
      ? () => {
          this.#arrivals.set(id, arrival(env));
          this.#drainer!.kick(conversation);
        }
      : () => this.#enqueue(env, id, env.occurredAt.getTime(), this.#earlierRecords(conversation));
    const batch = this.#batch.getStore();
    if (batch) batch.push(start);
    else start();
    return { status: "accepted", inboundId: rec.id };
  }

  /**
   * Shared mode: takes one recorded event into this process's runner (under
   * the conversation's lease); the promise settles once it is committed.
   */
  async #take(rec: InboundRecord): Promise<{ done: Promise<unknown> } | undefined> {
    const env = await this.#recorded(rec);
    if (typeof env === "string") return undefined;
    this.deps.ledger.occurredAt.set(rec.id, rec.occurredAt.getTime());
    if (!this.#arrivals.has(rec.id)) this.#arrivals.set(rec.id, arrival(env));
    const handle = await this.#dispatch(env, rec.id).catch((err: unknown) => {
      this.#arrivals.delete(rec.id);
      throw err;
    });
    if (!handle || handle.accepted === "consumed" || handle.accepted === "context") this.#handled(rec.id, handledWithoutTurn(handle));
    if (handle) {
      this.#watch(handle, env, rec.id);
      void handle.done.finally(() => this.#arrivals.delete(rec.id));
    }
    return handle ? { done: handle.done } : undefined;
  }

  #chatKey(env: InboundEnvelope): string {
    return `${env.platform}:${env.botId}:${env.chatId}:${env.threadId ?? ""}`;
  }

  /** The records of this conversation still in flight (a later event's handling waits for them). */
  #earlierRecords(conversation: string): Promise<unknown> | undefined {
    const inFlight = this.#recording.get(conversation);
    return inFlight?.size ? Promise.allSettled([...inFlight]) : undefined;
  }

  #enqueue(env: InboundEnvelope, inboundId: string, occurredAt: number, after?: Promise<unknown>): void {
    this.deps.ledger.occurredAt.set(inboundId, occurredAt);
    this.#arrivals.set(inboundId, arrival(env));
    const key = this.#chatKey(env);
    const prev = this.#chains.get(key) ?? Promise.resolve();
    const next = (after ? Promise.all([prev, after]) : prev).then(() => this.#handle(env, inboundId));
    this.#chains.set(key, next);
    this.#pendingHandles.add(next);
    void next.finally(() => {
      this.#pendingHandles.delete(next);
      if (this.#chains.get(key) === next) this.#chains.delete(key);
    });
  }

  /** Sizes of the per-chat state, for tests and diagnostics: idle, every one is back to its resting size. */
  stats(): { chains: number; arrivals: number; recording: number; bindings: number } {
    return { chains: this.#chains.size, arrivals: this.#arrivals.size, recording: this.#recording.size, bindings: this.#bindings.size };
  }

  /** Waits until every queued event has been taken by the runner. */
  async idle(): Promise<void> {
    while (this.#pendingHandles.size) await Promise.allSettled([...this.#pendingHandles]);
    await this.#drainer?.idle();
  }

  /**
   * Hands one event to the runner. If that fails (the store is failing), it
   * is retried here with bounded backoff, and the chat's later events wait
   * behind it (this runs in the chat's chain): order is kept. At the event's
   * INBOUND_TTL it is given up with a notice in its chat; while stopping it
   * stays unhandled and is replayed at the next start.
   */
  async #handle(env: InboundEnvelope, inboundId: string): Promise<void> {
    await this.#gate;
    const deadline = env.occurredAt.getTime() + this.deps.policy.INBOUND_TTL;
    for (let attempt = 1; ; attempt++) {
      try {
        const handle = await this.#dispatch(env, inboundId);
        // Consumed and context-only events complete no turn: stop tracking them.
        if (!handle || handle.accepted === "consumed" || handle.accepted === "context") this.#handled(inboundId, handledWithoutTurn(handle));
        // A message dropped by /stop or shutdown completes no turn either.
        else void handle.done.finally(() => this.#arrivals.delete(inboundId));
        if (handle) this.#watch(handle, env, inboundId);
        return;
      } catch (err) {
        this.deps.metrics.internalErrors.inc({ where: "inbound-handle" });
        const wait = Math.min(5000, 50 * 2 ** Math.min(attempt - 1, 10));
        if (this.#stopping) {
          this.#arrivals.delete(inboundId);
          this.deps.log.error({ platform: env.platform, inboundId, err: errInfo(err) }, "could not handle an inbound event while stopping; it is replayed at the next start");
          return;
        }
        if (Date.now() + wait >= deadline) {
          this.#arrivals.delete(inboundId);
          await this.#unanswered(env, inboundId, `could not be handled: ${String(errInfo(err).message ?? "error")}`);
          return;
        }
        this.deps.log[attempt >= 5 ? "error" : "warn"]({ platform: env.platform, inboundId, attempt, retryInMs: wait, err: errInfo(err) }, "could not handle an inbound event; retrying (its chat's later events wait)");
        await sleep(wait);
      }
    }
  }

  /** A turn that could not be committed before the event's TTL: its chat is told. */
  #watch(handle: RunHandle, env: InboundEnvelope, inboundId: string): void {
    void handle.done.then((outcome) => {
      if (outcome !== "unanswered") return;
      this.#arrivals.delete(inboundId);
      return this.#unanswered(env, inboundId, "its turn could not be committed");
    });
  }

  /**
   * One info line per handled message: where it came from, how it ended and
   * how long it took from arrival. Never its content.
   */
  #handled(inboundId: string, outcome: string): void {
    const a = this.#arrivals.get(inboundId);
    if (!a) return;
    this.#arrivals.delete(inboundId);
    this.deps.log.info({ platform: a.platform, chatKind: a.chatKind, outcome, latencyMs: Math.round(performance.now() - a.at), inboundId }, "message handled");
  }

  /**
   * An edited or deleted message: its transcript entry takes the new text
   * (marked edited) or is marked deleted, and the live windows that hold it
   * are dropped, so the model never sees the old text again. Never answered.
   * Access needs no check: only entries that came from this very message
   * change, and a sender who was never let in has none.
   */
  async #applyChange(env: InboundEnvelope, change: NonNullable<InboundEnvelope["change"]>, inboundId: string): Promise<void> {
    const { runner, policy, log } = this.deps;
    const sourceId = `${env.platform}:${env.botId}:${env.chatId}:${change.messageId}`;
    let sessions: string[] = [];
    if (change.kind === "delete") sessions = await runner.opts.transcript.applyChange(sourceId, { kind: "delete" });
    else if (env.text.length <= policy.MAX_INBOUND_CHARS) sessions = await runner.opts.transcript.applyChange(sourceId, { kind: "edit", content: renderUserText({ text: env.text, attachments: env.attachments } as Parameters<typeof renderUserText>[0]) });
    else log.info({ platform: env.platform, inboundId }, "an edit longer than MAX_INBOUND_CHARS was not applied; the transcript keeps the earlier text");
    for (const id of sessions) if (runner.has(id)) runner.get(id).invalidateWindow();
    await this.deps.ledger.commit({ sessionId: sessions[0] ?? "", inboundIds: [inboundId], messages: [], turnIncrement: 0, replies: [] });
    this.#handled(inboundId, "change");
  }

  async #reply(env: InboundEnvelope, inboundId: string, text: string, sessionId = ""): Promise<void> {
    const r = await this.deps.ledger.commit({ sessionId, inboundIds: [inboundId], messages: [], turnIncrement: 0, replies: [{ replyTo: env.replyTo, text, kind: "notice", severity: "info" }] });
    for (const id of r.deliveryIds) await this.deps.outbound.deliverId(id);
  }

  async #dispatch(env: InboundEnvelope, inboundId: string): Promise<RunHandle | undefined> {
    const { policy, identities, runner } = this.deps;
    if (env.change) {
      await this.#applyChange(env, env.change, inboundId);
      return undefined;
    }
    const adapter = this.adapters.find((a) => adapterKey(a.platform, a.botId) === adapterKey(env.platform, env.botId));
    const isAdmin = listed(policy.ADMIN_USERS, env);

    if (env.chatKind === "private" && policy.DM_POLICY !== "open" && !adapter?.trusted && !isAdmin && !listed(policy.ALLOW_FROM, env)) {
      const granted = await this.deps.pairing.store.isGranted(env.platform, env.botId, env.senderId);
      if (!granted) {
        if (policy.DM_POLICY === "allowlist") {
          await this.#reply(env, inboundId, "Sorry, this bot only talks to people on its allowlist. Ask its operator for access.");
          return;
        }
        const p = await this.deps.pairing.request({ platform: env.platform, botId: env.botId, senderId: env.senderId, displayName: env.senderName });
        await this.#reply(
          env,
          inboundId,
          p.kind === "code"
            ? `Hi! This bot needs its operator's approval before it can chat with you. Your pairing code is ${p.code} (valid for 1 hour). The operator approves it with: switchboard pairing approve ${p.code}`
            : `You asked for a pairing code a moment ago. Please try again in ${Math.max(1, Math.ceil((p.retryAt.getTime() - Date.now()) / 60_000))} minute(s).`,
        );
        return;
      }
    }

    const length = env.textLength ?? env.text.length;
    if (length > policy.MAX_INBOUND_CHARS) {
      await this.#reply(env, inboundId, `Your message is too long (${length} characters; the limit is ${policy.MAX_INBOUND_CHARS}). Please shorten it or send it in parts.`);
      return;
    }

    const userId = await identities.userId(env.platform, env.senderId, env.senderName);
    let conversation: InEvent["conversation"];
    let respond = true;
    if (env.chatKind === "private") {
      conversation = { agentId: env.botId, userId, channel: env.channel };
    } else {
      let groupId = await identities.groupId(env.platform, env.chatId, { title: env.chatTitle });
      if (env.chatKind === "thread" && env.threadId && policy.THREAD_SESSIONS === "own") {
        groupId = await identities.groupId(env.platform, `${env.chatId}:thread:${env.threadId}`, { parentId: groupId });
      }
      conversation = { agentId: env.botId, userId: groupId, groupId, channel: env.channel };
      respond = answersInGroup(env, policy.GROUP_REQUIRE_MENTION, adapter?.botUsername);
    }

    const key = this.deps.registry.chatKey(conversation);
    const cached = this.#bindings.get(key);
    let info: Info;
    if (!this.#shared && cached && runner.has(cached) && !runner.get(cached).closed) info = runner.get(cached).info;
    else {
      info = await this.deps.registry.resolveChatChannel(conversation);
      setBounded(this.#bindings, key, info.id, CHAT_CACHE_LIMIT);
    }
    const event: InEvent = {
      type: "message",
      text: env.text,
      attachments: env.attachments,
      respond,
      conversation,
      origin: { platform: env.platform, chatId: env.chatId, threadId: env.threadId, senderId: env.senderId, senderName: env.senderName, messageId: env.messageId, userId },
      replyTo: { ...env.replyTo, kind: env.chatKind === "private" ? "private" : "group" },
      inboundId,
      receivedAt: new Date(),
      isAdmin,
      botUsername: adapter?.botUsername,
    };
    if (this.#stopping) return undefined;
    return runner.run(runner.open(info), event);
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

/** The first `max` UTF-16 units, never ending on half a surrogate pair. */
function cutText(text: string, max: number): string {
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}
