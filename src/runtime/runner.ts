import type { Logger } from "../log.js";
import { SessionError, errors } from "../session/errors.js";
import { StoreError } from "../store/errors.js";
import type { Info } from "../session/info.js";
import type { Registry } from "../session/registry.js";
import type { TranscriptStore } from "../store/transcript.js";
import type { MemoryStore } from "../store/memories.js";
import type { Agent } from "../agent/types.js";
import type { PersonaRegistry } from "../agent/personas.js";
import type { InEvent, MessageEvent, OutKind, Severity } from "./events.js";
import { TranscriptLedger, type Ledger, type Reply } from "./ledger.js";
import { LiveSession, type ContextLimits } from "./live-session.js";
import { SinkRouter, type Sink } from "./sink-router.js";
import { errInfo } from "../log.js";
import { mergeInto, newPending, renderUserText, sourceIdOf } from "./pending.js";
import { userEntry } from "./speaker.js";
import { TurnAbandoned, executeTurn, type Pending, type TurnOutcome } from "./turn.js";

export { errInfo, renderUserText };

export type BusyPolicy = "queue" | "collect" | "interrupt";

export interface InterceptContext {
  readonly session: LiveSession;
  readonly runner: Runner;
  /** Adds a notice; it is delivered as a `notice` event with the event's reply address. */
  notify(severity: Severity, text: string): void;
}

/**
 * Return the event unchanged to pass it on, a different event to replace it
 * (the first replacement wins and ends the chain), or nothing to consume it.
 */
export type Interceptor = (event: InEvent, ctx: InterceptContext) => InEvent | null | undefined | void | Promise<InEvent | null | undefined | void>;

export interface RunHandle {
  sessionId: string;
  accepted: "consumed" | "queued" | "collected" | "context";
  /** Settles when the event's handling is committed. */
  done: Promise<TurnOutcome>;
}

export interface RunnerOptions {
  registry: Registry;
  transcript: TranscriptStore;
  /** Builds the agent for a turn from the session's metadata (and the session, for per-user tools). */
  agentFactory: (metadata: Record<string, unknown>, ctx: { session: Info }) => Agent;
  personas: PersonaRegistry;
  memories?: MemoryStore;
  ledger?: Ledger;
  sinks?: SinkRouter;
  busyPolicy?: BusyPolicy;
  context?: ContextLimits;
  turnTimeoutMs?: number;
  typingIntervalMs?: number;
  /**
   * At most this many live sessions stay in memory; past it (by a tenth, so
   * the sweep is rare) the least recently used idle ones are closed. A closed
   * session reopens from the store on its next event.
   */
  maxLiveSessions?: number;
  /** The typing indicator first shows when a turn has run this long (a quick answer needs none). */
  typingDelayMs?: number;
  log?: Logger;
  /** Re-read the transcript window from the store for every turn (several processes share the database). */
  freshWindow?: boolean;
  /** Called after every committed turn (reflection hooks in here). Never awaited. */
  onTurnCommitted?: (session: LiveSession) => void;
  /**
   * Until when (epoch ms) a turn's failing commit is retried, given the
   * inbound events it answers (their INBOUND_TTL); undefined: not retried.
   * See durable-commit.ts.
   */
  commitDeadline?: (inboundIds: string[]) => number | undefined;
  /** Told of every failed commit attempt (counted in /metrics). */
  onCommitError?: (err: unknown) => void;
  /** Fetches a message's attachments for the turn (images for vision, voice to text): src/runtime/media/. */
  prepareInput?: import("./media/input.js").InputPreparer;
}

interface Worker {
  intake: Promise<unknown>;
  queue: Pending[];
  collected: Pending | null;
  running: { pending: Pending; abort: AbortController; settled: Promise<void> } | null;
  /** Resolved when the worker has nothing running or queued. */
  idleWaiters: Array<() => void>;
}

/** Remembers where rotated sessions went, so late events for them are forwarded (bounded). */
const RETIRED_CAP = 50_000;

/**
 * The engine between a conversation's binding and its replies. It holds the
 * live sessions, runs the interceptor chain, applies the busy policy, runs
 * agent turns one at a time per session, and fans replies out through sinks.
 */
export class Runner {
  readonly sinks: SinkRouter;
  readonly ledger: Ledger;
  readonly #live = new Map<string, LiveSession>();
  readonly #workers = new Map<string, Worker>();
  readonly #retired = new Map<string, string>();
  readonly #interceptors: Interceptor[] = [];
  #closed = false;
  /** Shutting down: running turns may finish, nothing new starts. */
  #draining = false;

  constructor(readonly opts: RunnerOptions) {
    this.sinks = opts.sinks ?? new SinkRouter(opts.log);
    this.ledger = opts.ledger ?? new TranscriptLedger(opts.transcript);
  }

  get registry(): Registry {
    return this.opts.registry;
  }

  get size(): number {
    return this.#live.size;
  }

  /** Adds a live session under `id`. AlreadyExists if the id is taken; the existing one is untouched. */
  create(id: string, session: LiveSession): LiveSession {
    if (this.#closed) throw errors.closed("The runner");
    if (this.#live.has(id)) throw errors.alreadyExists(`Live session ${id}`, { sessionId: id });
    this.#live.set(id, session);
    return session;
  }

  /** The live session `id`. NotFound if there is none. */
  get(id: string): LiveSession {
    const s = this.#live.get(id);
    if (!s) throw errors.notFound(`Live session ${id}`, { sessionId: id });
    return s;
  }

  has(id: string): boolean {
    return this.#live.has(id);
  }

  /** The live session for `info`, created on first use. */
  open(info: Info): LiveSession {
    const existing = this.#live.get(info.id);
    if (existing) return existing;
    const session = this.create(info.id, this.newSession(info));
    const cap = this.opts.maxLiveSessions;
    if (cap && this.#live.size > Math.ceil(cap * 1.1)) this.#evict([...this.#live.values()].sort((a, b) => a.lastUsed - b.lastUsed), this.#live.size - cap);
    return session;
  }

  newSession(info: Info): LiveSession {
    return new LiveSession(info, {
      registry: this.opts.registry,
      transcript: this.opts.transcript,
      context: this.opts.context,
      publish: (e) => void this.sinks.deliver(e.sessionId, e),
    });
  }

  /** With several processes on one database, re-reads the session's settings (commands that show them call this). */
  async refresh(session: LiveSession): Promise<void> {
    if (this.opts.freshWindow) await session.reload();
  }

  /** Adds an interceptor at the end of the chain. Returns an idempotent remover. */
  register(interceptor: Interceptor): () => void {
    this.#interceptors.push(interceptor);
    return () => {
      const i = this.#interceptors.indexOf(interceptor);
      if (i >= 0) this.#interceptors.splice(i, 1);
    };
  }

  /** Registers a sink for these kinds (empty: all). Returns an idempotent remover. */
  withSink(kinds: readonly OutKind[], fn: Sink): () => void {
    return this.sinks.add(kinds, fn);
  }

  #worker(id: string): Worker {
    let w = this.#workers.get(id);
    if (!w) {
      w = { intake: Promise.resolve(), queue: [], collected: null, running: null, idleWaiters: [] };
      this.#workers.set(id, w);
    }
    return w;
  }

  /**
   * Takes one event for `session`. Events are taken one at a time, in the
   * order `run` was called; the returned promise settles once the event is
   * consumed or queued, and `done` once its handling is committed.
   */
  run(session: LiveSession, event: InEvent): Promise<RunHandle> {
    if (this.#closed || this.#draining) return Promise.reject(errors.closed("The runner"));
    const w = this.#worker(session.id);
    const taken = w.intake.then(() => this.#take(session, event));
    w.intake = taken.catch(() => undefined);
    return taken;
  }

  async #take(session: LiveSession, incoming: InEvent): Promise<RunHandle> {
    const event: InEvent = incoming.boundSessionId ? incoming : { ...incoming, boundSessionId: session.id };
    // A rotated or switched session forwards later messages to where its conversation went.
    const forwardTo = session.successorId ?? (session.info.archived ? this.#retired.get(session.id) : undefined);
    if (event.type === "message" && forwardTo) return this.run(await this.#openById(forwardTo), event);
    if (event.type === "message" && (session.closed || session.info.archived)) {
      const current = await this.opts.registry.resolveChatChannel(event.conversation);
      if (current.id !== session.id) return this.run(this.open(current), event);
    }
    if (session.closed) throw errors.closed(`Session ${session.id}`);

    const notices: Array<{ severity: Severity; text: string }> = [];
    const ctx: InterceptContext = { session, runner: this, notify: (severity, text) => notices.push({ severity, text }) };
    let ev: InEvent | null = event;
    try {
      for (const interceptor of [...this.#interceptors]) {
        const r: InEvent | null | undefined | void = await interceptor(ev, ctx);
        if (r === null || r === undefined) {
          ev = null;
          break;
        }
        if (r !== ev) {
          ev = r;
          break;
        }
      }
      if (ev?.type === "switch") {
        const switched = await this.#switch(session, ev);
        return this.#consumed(await this.#follow(session), ev, [...notices, ...switched]);
      }
    } catch (err) {
      // The database being away is worth retrying (the event stays unhandled); anything else is answered.
      if (err instanceof StoreError) throw err;
      const text = err instanceof SessionError ? `${err.code}: ${err.message}` : "Sorry, that command failed. The operator can find the details in the gateway's log.";
      if (!(err instanceof SessionError)) this.opts.log?.error({ sessionId: session.id, err: errInfo(err) }, "a command failed");
      return this.#consumed(await this.#follow(session), event, [...notices, { severity: "error", text }]);
    }
    // An interceptor may have handed the conversation to another session: replies go where it went.
    if (ev === null) return this.#consumed(await this.#follow(session), event, notices);
    if (notices.length) await this.#commitAndEmit(await this.#follow(session), event, [], 0, notices, false);

    switch (ev.type) {
      case "interrupt":
        return this.#consumed(session, ev, this.stop(session));
      case "message":
        return this.#accept(await this.#follow(session), ev);
    }
  }

  async #follow(session: LiveSession): Promise<LiveSession> {
    return session.successorId && !this.#closed ? this.#openById(session.successorId) : session;
  }

  async #openById(id: string): Promise<LiveSession> {
    return this.#live.get(id) ?? this.open(await this.opts.registry.getUnscoped(id));
  }

  async #consumed(session: LiveSession, event: InEvent, notices: Array<{ severity: Severity; text: string }>): Promise<RunHandle> {
    await this.#commitAndEmit(session, event, [], 0, notices, true);
    return { sessionId: session.id, accepted: "consumed", done: Promise.resolve("consumed") };
  }

  /** Commits notices (and marks the inbound handled when `final`), then emits them. */
  async #commitAndEmit(session: LiveSession, event: InEvent, messages: Array<{ role: "user" | "assistant"; content: string; sourceId?: string; meta?: string; name?: string }>, turnIncrement: number, notices: Array<{ severity: Severity; text: string }>, final: boolean): Promise<void> {
    const replies: Reply[] = notices.map((n) => ({ replyTo: event.replyTo, text: n.text, kind: "notice", severity: n.severity }));
    const { deliveryIds } = await this.ledger.commit({
      sessionId: session.id,
      inboundIds: final && event.inboundId ? [event.inboundId] : [],
      messages,
      turnIncrement,
      replies,
    });
    if (messages.length) session.remember(messages);
    notices.forEach((n, i) =>
      session.emit({ kind: "notice", sessionId: session.id, severity: n.severity, text: n.text, replyTo: event.replyTo, inboundId: event.inboundId, deliveryId: deliveryIds[i] }),
    );
  }

  async #accept(session: LiveSession, ev: MessageEvent): Promise<RunHandle> {
    if (!ev.respond) {
      await this.#commitAndEmit(session, ev, [userEntry(ev, renderUserText(ev), sourceIdOf(ev))], 0, [], true);
      return { sessionId: session.id, accepted: "context", done: Promise.resolve("context") };
    }
    const w = this.#worker(session.id);
    const policy = this.opts.busyPolicy ?? "queue";
    if (w.running && policy === "collect") {
      if (w.collected) {
        mergeInto(w.collected, ev);
        return { sessionId: session.id, accepted: "collected", done: w.collected.done };
      }
      w.collected = newPending(ev);
      return { sessionId: session.id, accepted: "collected", done: w.collected.done };
    }
    const pending = newPending(ev);
    if (w.running && policy === "interrupt") {
      w.queue.unshift(pending);
      this.#abortRunning(session, w);
    } else {
      w.queue.push(pending);
    }
    this.#pump(session, w);
    return { sessionId: session.id, accepted: "queued", done: pending.done };
  }

  #abortRunning(session: LiveSession, w: Worker): void {
    if (!w.running) return;
    session.fence();
    w.running.abort.abort(new Error("interrupted"));
  }

  #pump(session: LiveSession, w: Worker): void {
    if (w.running) return;
    const stopped = this.#closed || this.#draining || session.closed;
    let next = stopped ? undefined : w.queue.shift();
    if (!next && w.collected && !stopped) {
      next = w.collected;
      w.collected = null;
    }
    if (!next) {
      for (const wake of w.idleWaiters.splice(0)) wake();
      return;
    }
    const abort = new AbortController();
    const pending = next;
    const settled = executeTurn(this, session, pending, session.generation, abort)
      .then((outcome) => pending.resolve(outcome))
      .catch((err) => {
        this.opts.log?.error({ sessionId: session.id, err: errInfo(err) }, "a turn failed outside the agent");
        pending.resolve("failed");
      })
      .finally(() => {
        w.running = null;
        this.#pump(session, w);
      });
    w.running = { pending, abort, settled };
  }

  /**
   * Resolves once the session has no turn running or queued: a command that
   * must come after the messages sent before it (/new) waits for this.
   */
  whenIdle(session: LiveSession): Promise<void> {
    const w = this.#worker(session.id);
    if (!w.running && w.queue.length === 0 && !w.collected) return Promise.resolve();
    return new Promise((resolve) => w.idleWaiters.push(resolve));
  }

  /**
   * /stop: aborts the running turn and drops the queued messages. Their
   * inbound records are committed as handled (their text stays in the
   * transcript), so a restart does not replay them. Returns the notices.
   */
  stop(session: LiveSession): Array<{ severity: Severity; text: string }> {
    const w = this.#worker(session.id);
    const wasRunning = !!w.running;
    const dropped = [...w.queue, ...(w.collected ? [w.collected] : [])];
    w.queue = [];
    w.collected = null;
    this.#abortRunning(session, w);
    for (const p of dropped) void this.#drop(session, p);
    const text = wasRunning || dropped.length
      ? `Stopped.${dropped.length ? ` Dropped ${dropped.length} queued message${dropped.length === 1 ? "" : "s"}.` : ""}`
      : "Nothing to stop.";
    session.emit({ kind: "lifecycle", sessionId: session.id, phase: "stopped", detail: { dropped: dropped.length } });
    return [{ severity: "info", text }];
  }

  async #drop(session: LiveSession, p: Pending): Promise<void> {
    try {
      await this.ledger.commit({ sessionId: session.id, inboundIds: p.inboundIds, messages: [userEntry(p.event, renderUserText(p.event), p.sourceId)], turnIncrement: 0, replies: [] });
    } catch (err) {
      this.opts.log?.error({ sessionId: session.id, err: errInfo(err) }, "could not record dropped messages");
    }
    p.resolve("dropped");
  }

  /**
   * Moves a conversation from `from` to the session `to` (after /new or
   * /resume): fences and retires `from`, and hands its queued messages over.
   */
  handoff(from: LiveSession, to: Info, phase: "rotated" | "switched"): LiveSession {
    this.#retired.delete(to.id);
    const next = this.open(to);
    const w = this.#worker(from.id);
    const moved = [...w.queue, ...(w.collected ? [w.collected] : [])];
    w.queue = [];
    w.collected = null;
    this.#abortRunning(from, w);
    from.successorId = next.id;
    this.#retire(from.id, next.id);
    const nw = this.#worker(next.id);
    nw.queue.push(...moved);
    next.emit({ kind: "lifecycle", sessionId: next.id, phase, detail: { previousId: from.id } });
    this.#live.delete(from.id);
    const settled = w.running?.settled ?? Promise.resolve();
    void settled.then(() => {
      from.close();
      if (!w.running && w.queue.length === 0) this.#workers.delete(from.id);
      this.#pump(next, nw);
    });
    return next;
  }

  #retire(id: string, successor: string): void {
    this.#retired.set(id, successor);
    if (this.#retired.size > RETIRED_CAP) this.#retired.delete(this.#retired.keys().next().value!);
  }

  async #switch(session: LiveSession, ev: Extract<InEvent, { type: "switch" }>): Promise<Array<{ severity: Severity; text: string }>> {
    const r = await this.opts.registry.switchChannel({ ...ev.conversation, targetId: ev.targetSessionId, expectedSessionId: session.id });
    if (r.current.id === session.id) return [{ severity: "info", text: `Already in session ${session.id}.` }];
    this.handoff(session, r.current, "switched");
    return [{ severity: "success", text: `Resumed session ${r.current.id} (${r.current.turnCount} turns).` }];
  }

  /** Closes live sessions unused for `idleMs`, keeping memory bounded as chats pile up. */
  evictIdle(idleMs: number, now = Date.now()): number {
    return this.#evict([...this.#live.values()].filter((s) => now - s.lastUsed >= idleMs));
  }

  /** Closes up to `limit` of `candidates`, in order, skipping any with a turn running or queued, or a live subscriber. */
  #evict(candidates: LiveSession[], limit = Infinity): number {
    let n = 0;
    for (const s of candidates) {
      if (n >= limit) break;
      const w = this.#workers.get(s.id);
      if (w?.running || w?.queue.length || s.subscriberCount) continue;
      s.close();
      this.#live.delete(s.id);
      this.#workers.delete(s.id);
      n++;
    }
    return n;
  }

  /**
   * Graceful stop, first half: takes no new event and starts no queued turn,
   * and waits up to `graceMs` for the running turns to finish (commit and
   * emit their replies). Resolves with how many are still running; close()
   * then abandons them. Queued turns are left to the next start.
   */
  async drain(graceMs: number): Promise<{ running: number }> {
    this.#draining = true;
    const settled = () => [...this.#workers.values()].flatMap((w) => (w.running ? [w.running.settled] : []));
    const deadline = Date.now() + graceMs;
    for (let left = settled(); left.length && Date.now() < deadline; left = settled()) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled(left), new Promise<void>((r) => (timer = setTimeout(r, Math.max(0, deadline - Date.now()))))]);
      clearTimeout(timer);
    }
    return { running: settled().length };
  }

  /**
   * Rejects new events, abandons running turns, closes every live session.
   * Idempotent. An abandoned turn commits nothing, and a queued one never
   * ran: their events stay unhandled and are replayed at the next start.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const running: Promise<void>[] = [];
    for (const w of this.#workers.values()) {
      if (w.running) {
        w.running.abort.abort(new TurnAbandoned());
        running.push(w.running.settled);
      }
      for (const p of [...w.queue, ...(w.collected ? [w.collected] : [])]) p.resolve("dropped");
    }
    await Promise.allSettled(running);
    for (const w of this.#workers.values()) for (const wake of w.idleWaiters.splice(0)) wake();
    for (const s of this.#live.values()) s.close();
    this.#live.clear();
    this.#workers.clear();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Sizes of the per-session state, for tests and diagnostics: idle, nothing runs, waits or is queued. */
  stats(): { live: number; workers: number; running: number; queued: number; collected: number; idleWaiters: number; retired: number } {
    let running = 0;
    let queued = 0;
    let collected = 0;
    let idleWaiters = 0;
    for (const w of this.#workers.values()) {
      if (w.running) running++;
      queued += w.queue.length;
      if (w.collected) collected++;
      idleWaiters += w.idleWaiters.length;
    }
    return { live: this.#live.size, workers: this.#workers.size, running, queued, collected, idleWaiters, retired: this.#retired.size };
  }
}
