import { errors } from "../session/errors.js";
import type { Info } from "../session/info.js";
import type { Registry } from "../session/registry.js";
import type { InEvent, MessageEvent, OutEvent, OutKind } from "./events.js";
import { TranscriptLedger, type Ledger } from "./ledger.js";
import { LiveSession } from "./live-session.js";
import { SinkRouter, type Sink } from "./sink-router.js";
import { errInfo } from "../log.js";
import { renderUserText } from "./pending.js";
import { executeTurn, type TurnOutcome } from "./turn.js";
import type { BusyPolicy } from "./busy-policy.js";
import type { RunnerOptions } from "./runner-options.js";
import { handoff, type Whereabouts } from "./handoff.js";
import { InterceptorChain, type InterceptContext, type Interceptor } from "./interceptors.js";
import { SessionPool } from "./session-pool.js";
import { TurnWorkers } from "./turn-workers.js";
import { CurrentSessions } from "./current-sessions.js";
import { EventIntake } from "./event-intake.js";

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

/**
 * The engine between a conversation's binding and its replies. It holds the
 * live sessions (SessionPool) and where each conversation is (CurrentSessions),
 * takes events through the interceptor chain and the busy policy (EventIntake),
 * runs agent turns one at a time per session (TurnWorkers), and fans replies
 * out through sinks.
 */
export class Runner {
  readonly sinks: SinkRouter;
  readonly ledger: Ledger;
  readonly #workers: TurnWorkers;
  /** Takes each session's events one at a time, in the order they reached the runner. */
  readonly #intake: EventIntake;
  readonly #pool: SessionPool;
  readonly #interceptors = new InterceptorChain();
  /** Which session each conversation is on now (see current-sessions.ts); handoff moves it. */
  readonly #current = new CurrentSessions();
  /** Where a conversation is: what forwarding an event to the session it moved to reads (handoff.ts). */
  readonly #where: Whereabouts;
  /** Every live session publishes through this one function (a closure each was 424 bytes a session). */
  readonly #publish = (e: OutEvent): void => void this.sinks.deliver(e.sessionId, e);
  #closed = false;
  /** Shutting down: running turns may finish, nothing new starts. */
  #draining = false;

  constructor(readonly opts: RunnerOptions) {
    this.sinks = opts.sinks ?? new SinkRouter(opts.log);
    this.ledger = opts.ledger ?? new TranscriptLedger(opts.transcript);
    this.#workers = new TurnWorkers({
      ledger: this.ledger,
      log: opts.log,
      execute: (session, pending, generation, abort) => executeTurn(this, session, pending, generation, abort),
      halted: () => this.#closed || this.#draining,
    });
    this.#where = {
      current: this.#current,
      registry: opts.registry,
      open: (info) => this.open(info),
      openById: (id) => this.#openById(id),
    };
    this.#pool = new SessionPool({ busy: (id) => this.#workers.busy(id), evicted: (id) => this.#workers.queues.delete(id), maxLive: opts.maxLiveSessions });
    this.#intake = new EventIntake(this, { where: this.#where, interceptors: this.#interceptors, workers: this.#workers, closed: () => this.#closed });
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
      context: this.opts.contextOf?.(info) ?? this.opts.context,
      publish: this.#publish,
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
    return this.#intake.run(session, event);
  }

  async #openById(id: string): Promise<LiveSession> {
    return this.#pool.get(id) ?? this.open(await this.opts.registry.getUnscoped(id));
  }

  /**
   * Resolves once the session has no turn running or queued: a command that
   * must come after the messages sent before it (/new) waits for this.
   */
  whenIdle(session: LiveSession): Promise<void> {
    return this.#workers.whenIdle(session);
  }

  /**
   * /stop: aborts the running turn and drops the queued messages. Their
   * inbound records are committed as handled (their text stays in the
   * transcript), so a restart does not replay them. Says whether a turn was
   * running and how many messages were dropped.
   */
  stop(session: LiveSession): { running: boolean; dropped: number } {
    return this.#workers.stop(session);
  }

  /**
   * Moves a conversation from `from` to the session `to` (after /new or
   * /resume, see handoff.ts), and tells the reflection of a rotation.
   */
  handoff(from: LiveSession, to: Info, phase: "rotated" | "switched"): LiveSession {
    const next = handoff(
      { pool: this.#pool, queues: this.#workers.queues, current: this.#current, open: (info) => this.open(info), pump: (s, q) => this.#workers.pump(s, q) },
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
    return this.#workers.drain(graceMs);
  }

  /**
   * Abandons the session's running turn now, as close() does (a stop that
   * will not wait for a person's approval): it commits nothing, and its
   * event is replayed at the next start. Whether a turn was running.
   */
  abandon(sessionId: string): boolean {
    return this.#workers.abandon(sessionId);
  }

  /**
   * Rejects new events, abandons running turns, closes every live session.
   * Idempotent. An abandoned turn commits nothing, and a queued one never
   * ran: their events stay unhandled and are replayed at the next start.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#workers.abandonAll();
    this.#pool.closeAll();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Sizes of the per-session state, for tests and diagnostics: idle, nothing runs, waits or is queued. */
  stats(): { live: number; workers: number; running: number; queued: number; collected: number; idleWaiters: number; bindings: number } {
    return { live: this.#pool.size, workers: this.#workers.queues.size, ...this.#workers.queues.stats(), bindings: this.#current.size };
  }
}
