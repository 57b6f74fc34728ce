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
import { renderUserText, sourceIdOf } from "./pending.js";
import { userEntry } from "./speaker.js";
import { TurnAbandoned, executeTurn, type Pending, type TurnOutcome } from "./turn.js";
import { admit, type BusyPolicy } from "./busy-policy.js";
import { handoff, resume } from "./handoff.js";
import { InterceptorChain, type InterceptContext, type Interceptor } from "./interceptors.js";
import { SessionPool } from "./session-pool.js";
import { stopTurns } from "./stop.js";
import { TurnQueues, type TurnQueue } from "./turn-queue.js";
import { KeyedQueue } from "../keyed-queue.js";
import { CurrentSessions } from "./current-sessions.js";

export { errInfo, renderUserText };
export type { BusyPolicy, InterceptContext, Interceptor };

/** What the agent factory knows of a turn: the session, the message it answers, and a way to stop the turn's clock while a person decides. */
export interface AgentContext {
  session: Info;
  event?: MessageEvent;
  /** Stops AGENT_TIMEOUT's clock until the returned function is called (an approval waits for a person). */
  holdTimeout?: () => () => void;
}

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
  agentFactory: (metadata: Record<string, unknown>, ctx: AgentContext) => Agent;
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
  /** Called with the session a rotation (/new, /reset, an operator's) just archived (reflection reviews it). Never awaited. */
  onRotated?: (previousId: string) => void;
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

/**
 * The engine between a conversation's binding and its replies. It holds the
 * live sessions (SessionPool), runs the interceptor chain, applies the busy
 * policy, runs agent turns one at a time per session (TurnQueue), and fans
 * replies out through sinks.
 */
export class Runner {
  readonly sinks: SinkRouter;
  readonly ledger: Ledger;
  readonly #queues = new TurnQueues();
  /** A session's events are taken one at a time, in the order they reached the runner. */
  readonly #intake = new KeyedQueue();
  readonly #pool: SessionPool;
  readonly #interceptors = new InterceptorChain();
  /** Which session each conversation is on now (see current-sessions.ts); handoff moves it. */
  readonly #current = new CurrentSessions();
  #closed = false;
  /** Shutting down: running turns may finish, nothing new starts. */
  #draining = false;

  constructor(readonly opts: RunnerOptions) {
    this.sinks = opts.sinks ?? new SinkRouter(opts.log);
    this.ledger = opts.ledger ?? new TranscriptLedger(opts.transcript);
    this.#pool = new SessionPool({
      busy: (id) => {
        const q = this.#queues.peek(id);
        return !!(q?.running || q?.queue.length);
      },
      evicted: (id) => this.#queues.delete(id),
      maxLive: opts.maxLiveSessions,
    });
  }

  get registry(): Registry {
    return this.opts.registry;
  }

  get size(): number {
    return this.#pool.size;
  }

  /** Adds a live session under `id`. AlreadyExists if the id is taken; the existing one is untouched. */
  create(id: string, session: LiveSession): LiveSession {
    if (this.#closed) throw errors.closed("The runner");
    return this.#pool.add(id, session);
  }

  /** The live session `id`. NotFound if there is none. */
  get(id: string): LiveSession {
    const s = this.#pool.get(id);
    if (!s) throw errors.notFound(`Live session ${id}`, { sessionId: id });
    return s;
  }

  has(id: string): boolean {
    return this.#pool.has(id);
  }

  /** The live session for `info`, created on first use. */
  open(info: Info): LiveSession {
    const existing = this.#pool.get(info.id);
    if (existing) return existing;
    const session = this.create(info.id, this.newSession(info));
    this.#pool.bound();
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

  /**
   * The open live session the conversation (by its registry binding key) is
   * on, when this process knows it; undefined sends the caller to the registry.
   */
  liveFor(bindingKey: string): LiveSession | undefined {
    const id = this.#current.get(bindingKey);
    const s = id === undefined ? undefined : this.#pool.get(id);
    return s && !s.closed ? s : undefined;
  }

  /** Records the session a conversation's binding resolved to (for liveFor). */
  bound(bindingKey: string, sessionId: string): void {
    this.#current.set(bindingKey, sessionId);
  }

  /** Adds an interceptor at the end of the chain. Returns an idempotent remover. */
  register(interceptor: Interceptor): () => void {
    return this.#interceptors.register(interceptor);
  }

  /** Registers a sink for these kinds (empty: all). Returns an idempotent remover. */
  withSink(kinds: readonly OutKind[], fn: Sink): () => void {
    return this.sinks.add(kinds, fn);
  }

  /**
   * Takes one event for `session`. Events are taken one at a time, in the
   * order `run` was called; the returned promise settles once the event is
   * consumed or queued, and `done` once its handling is committed.
   */
  run(session: LiveSession, event: InEvent): Promise<RunHandle> {
    if (this.#closed || this.#draining) return Promise.reject(errors.closed("The runner"));
    return this.#intake.run(session.id, () => this.#take(session, event));
  }

  async #take(session: LiveSession, incoming: InEvent): Promise<RunHandle> {
    const event: InEvent = incoming.boundSessionId ? incoming : { ...incoming, boundSessionId: session.id };
    // A message for a session its conversation has left (rotated, switched away from, or a closed copy) goes where the conversation is.
    const current = event.type === "message" ? await this.#currentFor(session, event) : session;
    if (current !== session) return current.id === session.id ? this.#take(current, event) : this.run(current, event);
    if (session.closed) throw errors.closed(`Session ${session.id}`);

    const notices: Array<{ severity: Severity; text: string }> = [];
    const ctx: InterceptContext = { session, runner: this, notify: (severity, text) => notices.push({ severity, text }) };
    let ev: InEvent | null;
    try {
      ev = await this.#interceptors.run(event, ctx);
      if (ev?.type === "switch") {
        const switched = await resume(this.opts.registry, (from, to) => this.handoff(from, to, "switched"), session, ev);
        return this.#consumed(await this.#follow(session, event), ev, [...notices, ...switched]);
      }
    } catch (err) {
      // The database being away is worth retrying (the event stays unhandled); anything else is answered.
      if (err instanceof StoreError) throw err;
      const text =
        err instanceof SessionError ? `${err.code}: ${err.message}` : "Sorry, that command failed. The operator can find the details in the gateway's log.";
      if (!(err instanceof SessionError)) this.opts.log?.error({ sessionId: session.id, err: errInfo(err) }, "a command failed");
      return this.#consumed(await this.#follow(session, event), event, [...notices, { severity: "error", text }]);
    }
    // An interceptor may have handed the conversation to another session: replies go where it went.
    if (ev === null) return this.#consumed(await this.#follow(session, event), event, notices);
    if (notices.length) await this.#commitAndEmit(await this.#follow(session, event), event, [], 0, notices, false);

    switch (ev.type) {
      case "interrupt":
        return this.#consumed(session, ev, this.stop(session));
      case "message":
        return this.#accept(await this.#follow(session, event), ev);
    }
  }

  /**
   * The live session a message taken for `session` belongs to: the one the
   * conversation was handed to in this process (CurrentSessions), else, when
   * `session` is closed or archived, the one its binding names now.
   */
  async #currentFor(session: LiveSession, event: MessageEvent): Promise<LiveSession> {
    const key = this.opts.registry.bindingKey(event.conversation);
    const known = this.#current.get(key);
    if (known !== undefined && known !== session.id) return this.#openById(known);
    if (!session.closed && !session.info.archived) return session;
    const bound = await this.opts.registry.resolveChatChannel(event.conversation);
    this.#current.set(key, bound.id);
    return this.open(bound);
  }

  /** Where replies to `event` go after its interceptors ran: an interceptor may have handed the conversation to another session. */
  async #follow(session: LiveSession, event: InEvent): Promise<LiveSession> {
    if (this.#closed) return session;
    const known = this.#current.get(this.opts.registry.bindingKey(event.conversation));
    return known !== undefined && known !== session.id ? this.#openById(known) : session;
  }

  async #openById(id: string): Promise<LiveSession> {
    return this.#pool.get(id) ?? this.open(await this.opts.registry.getUnscoped(id));
  }

  async #consumed(session: LiveSession, event: InEvent, notices: Array<{ severity: Severity; text: string }>): Promise<RunHandle> {
    await this.#commitAndEmit(session, event, [], 0, notices, true);
    return { sessionId: session.id, accepted: "consumed", done: Promise.resolve("consumed") };
  }

  /** Commits notices (and marks the inbound handled when `final`), then emits them. */
  async #commitAndEmit(
    session: LiveSession,
    event: InEvent,
    messages: Array<{ role: "user" | "assistant"; content: string; sourceId?: string; meta?: string; name?: string }>,
    turnIncrement: number,
    notices: Array<{ severity: Severity; text: string }>,
    final: boolean,
  ): Promise<void> {
    const replies: Reply[] = notices.map((n) => ({ replyTo: event.replyTo, text: n.text, kind: "notice", severity: n.severity }));
    const { deliveryIds } = await this.ledger.commit({
      sessionId: session.id,
      inboundIds: final && event.inboundId ? [event.inboundId] : [],
      messages,
      turnIncrement,
      replies,
    });
    if (messages.length) session.remember(messages);
    notices.forEach((n, i) => {
      session.emit({
        kind: "notice",
        sessionId: session.id,
        severity: n.severity,
        text: n.text,
        replyTo: event.replyTo,
        inboundId: event.inboundId,
        deliveryId: deliveryIds[i],
      });
    });
  }

  async #accept(session: LiveSession, ev: MessageEvent): Promise<RunHandle> {
    if (!ev.respond) {
      await this.#commitAndEmit(session, ev, [userEntry(ev, renderUserText(ev), sourceIdOf(ev))], 0, [], true);
      return { sessionId: session.id, accepted: "context", done: Promise.resolve("context") };
    }
    const q = this.#queues.of(session.id);
    const { accepted, done } = admit(q, ev, this.opts.busyPolicy ?? "queue", () => q.abortRunning(session));
    if (accepted === "queued") this.#pump(session, q);
    return { sessionId: session.id, accepted, done };
  }

  #pump(session: LiveSession, q: TurnQueue): void {
    if (q.running) return;
    const stopped = this.#closed || this.#draining || session.closed;
    let next = stopped ? undefined : q.queue.shift();
    if (!next && q.collected && !stopped) {
      next = q.collected;
      q.collected = null;
    }
    if (!next) {
      q.wakeIdleWaiters();
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
        q.running = null;
        this.#pump(session, q);
      });
    q.running = { pending, abort, settled };
  }

  /**
   * Resolves once the session has no turn running or queued: a command that
   * must come after the messages sent before it (/new) waits for this.
   */
  whenIdle(session: LiveSession): Promise<void> {
    const q = this.#queues.of(session.id);
    if (q.idle) return Promise.resolve();
    return new Promise((resolve) => q.idleWaiters.push(resolve));
  }

  /**
   * /stop: aborts the running turn and drops the queued messages. Their
   * inbound records are committed as handled (their text stays in the
   * transcript), so a restart does not replay them. Returns the notices.
   */
  stop(session: LiveSession): Array<{ severity: Severity; text: string }> {
    return stopTurns(session, this.#queues.of(session.id), (p) => void this.#drop(session, p));
  }

  async #drop(session: LiveSession, p: Pending): Promise<void> {
    try {
      await this.ledger.commit({
        sessionId: session.id,
        inboundIds: p.inboundIds,
        messages: [userEntry(p.event, renderUserText(p.event), p.sourceId)],
        turnIncrement: 0,
        replies: [],
      });
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
    const next = handoff(
      { pool: this.#pool, queues: this.#queues, current: this.#current, open: (info) => this.open(info), pump: (s, q) => this.#pump(s, q) },
      from,
      to,
      phase,
    );
    if (phase === "rotated") {
      try {
        this.opts.onRotated?.(from.id);
      } catch (err) {
        this.opts.log?.error({ sessionId: from.id, err: errInfo(err) }, "rotation hook failed");
      }
    }
    return next;
  }

  /** Closes live sessions unused for `idleMs`, keeping memory bounded as chats pile up. */
  evictIdle(idleMs: number, now = Date.now()): number {
    return this.#pool.evictIdle(idleMs, now);
  }

  /**
   * Graceful stop, first half: takes no new event and starts no queued turn,
   * and waits up to `graceMs` for the running turns to finish (commit and
   * emit their replies). Resolves with how many are still running; close()
   * then abandons them. Queued turns are left to the next start.
   */
  async drain(graceMs: number): Promise<{ running: number }> {
    this.#draining = true;
    const settled = () => [...this.#queues.values()].flatMap((q) => (q.running ? [q.running.settled] : []));
    const deadline = Date.now() + graceMs;
    for (let left = settled(); left.length && Date.now() < deadline; left = settled()) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled(left), new Promise<void>((r) => (timer = setTimeout(r, Math.max(0, deadline - Date.now()))))]);
      clearTimeout(timer);
    }
    return { running: settled().length };
  }

  /**
   * Abandons the session's running turn now, as close() does (a stop that
   * will not wait for a person's approval): it commits nothing, and its
   * event is replayed at the next start. Whether a turn was running.
   */
  abandon(sessionId: string): boolean {
    const running = this.#queues.peek(sessionId)?.running;
    if (!running) return false;
    running.abort.abort(new TurnAbandoned());
    return true;
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
    for (const q of this.#queues.values()) {
      if (q.running) {
        q.running.abort.abort(new TurnAbandoned());
        running.push(q.running.settled);
      }
      for (const p of [...q.queue, ...(q.collected ? [q.collected] : [])]) p.resolve("dropped");
    }
    await Promise.allSettled(running);
    for (const q of this.#queues.values()) q.wakeIdleWaiters();
    this.#pool.closeAll();
    this.#queues.clear();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Sizes of the per-session state, for tests and diagnostics: idle, nothing runs, waits or is queued. */
  stats(): { live: number; workers: number; running: number; queued: number; collected: number; idleWaiters: number; bindings: number } {
    return { live: this.#pool.size, workers: this.#queues.size, ...this.#queues.stats(), bindings: this.#current.size };
  }
}
