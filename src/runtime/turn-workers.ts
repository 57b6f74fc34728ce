import { errInfo, type Logger } from "../log.js";
import { admit, type BusyPolicy } from "./busy-policy.js";
import type { MessageEvent } from "./events.js";
import type { Ledger } from "./ledger.js";
import type { LiveSession } from "./live-session.js";
import { renderUserText } from "./pending.js";
import { userEntry } from "./speaker.js";
import { stopTurns } from "./stop.js";
import { TurnAbandoned, type Pending, type TurnOutcome } from "./turn.js";
import { TurnQueues, type TurnQueue } from "./turn-queue.js";

export interface TurnWorkersOptions {
  ledger: Ledger;
  log?: Logger;
  /** Runs one turn (executeTurn), fenced by the session's generation at its start. */
  execute(session: LiveSession, pending: Pending, generation: number, abort: AbortController): Promise<TurnOutcome>;
  /** Closing or draining: no queued turn starts. */
  halted(): boolean;
}

/**
 * Each session's worker: its turns run one at a time from its TurnQueue, as
 * the busy policy admitted them, and are stopped (/stop), drained (a
 * graceful stop lets the running ones finish) or abandoned (shutdown: an
 * abandoned turn commits nothing, so its event is replayed at the next
 * start).
 */
export class TurnWorkers {
  readonly queues = new TurnQueues();

  constructor(private readonly opts: TurnWorkersOptions) {}

  /** The session has a turn running or queued. */
  busy(sessionId: string): boolean {
    const q = this.queues.peek(sessionId);
    return !!(q?.running || q?.queue.length);
  }

  /** Queues (or collects) a message that needs an answer under the busy policy, and starts it when the session is free. */
  accept(session: LiveSession, ev: MessageEvent, policy: BusyPolicy): { accepted: "queued" | "collected"; done: Promise<TurnOutcome> } {
    const q = this.queues.of(session.id);
    const admitted = admit(q, ev, policy, () => q.abortRunning(session));
    if (admitted.accepted === "queued") this.pump(session, q);
    return admitted;
  }

  /** Starts the session's next turn unless one runs (or nothing may start); wakes the idle waiters when there is none. */
  pump(session: LiveSession, q: TurnQueue): void {
    if (q.running) return;
    const stopped = this.opts.halted() || session.closed;
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
    const settled = this.opts
      .execute(session, pending, session.generation, abort)
      .then((outcome) => pending.resolve(outcome))
      .catch((err) => {
        this.opts.log?.error({ sessionId: session.id, err: errInfo(err) }, "a turn failed outside the agent");
        pending.resolve("failed");
      })
      .finally(() => {
        q.running = null;
        this.pump(session, q);
      });
    q.running = { pending, abort, settled };
  }

  /** Resolves once the session has no turn running or queued. */
  whenIdle(session: LiveSession): Promise<void> {
    const q = this.queues.of(session.id);
    if (q.idle) return Promise.resolve();
    return new Promise((resolve) => q.idleWaiters.push(resolve));
  }

  /** /stop: aborts the running turn and drops the queued messages, committing each as handled. Whether a turn ran, how many were dropped. */
  stop(session: LiveSession): { running: boolean; dropped: number } {
    return stopTurns(session, this.queues.of(session.id), (p) => void this.#drop(session, p));
  }

  async #drop(session: LiveSession, p: Pending): Promise<void> {
    try {
      await this.opts.ledger.commit({
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

  /** Waits up to `graceMs` for the running turns to finish (the caller halted new ones first). Resolves with how many still run. */
  async drain(graceMs: number): Promise<{ running: number }> {
    const settled = () => [...this.queues.values()].flatMap((q) => (q.running ? [q.running.settled] : []));
    const deadline = Date.now() + graceMs;
    for (let left = settled(); left.length && Date.now() < deadline; left = settled()) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled(left), new Promise<void>((r) => (timer = setTimeout(r, Math.max(0, deadline - Date.now()))))]);
      clearTimeout(timer);
    }
    return { running: settled().length };
  }

  /** Abandons the session's running turn: it commits nothing, and its event is replayed at the next start. Whether one ran. */
  abandon(sessionId: string): boolean {
    const running = this.queues.peek(sessionId)?.running;
    if (!running) return false;
    running.abort.abort(new TurnAbandoned());
    return true;
  }

  /** Abandons every running turn and drops the queued ones (never committed: replayed at the next start), then forgets them. */
  async abandonAll(): Promise<void> {
    const running: Promise<void>[] = [];
    for (const q of this.queues.values()) {
      if (q.running) {
        q.running.abort.abort(new TurnAbandoned());
        running.push(q.running.settled);
      }
      for (const p of [...q.queue, ...(q.collected ? [q.collected] : [])]) p.resolve("dropped");
    }
    await Promise.allSettled(running);
    for (const q of this.queues.values()) q.wakeIdleWaiters();
    this.queues.clear();
  }
}
