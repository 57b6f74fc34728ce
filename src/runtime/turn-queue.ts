import type { LiveSession } from "./live-session.js";
import type { Pending } from "./turn.js";

/**
 * One session's turns: at most one running, the messages queued behind it,
 * and (busy policy `collect`) the one follow-up that gathers what arrives
 * meanwhile.
 */
export class TurnQueue {
  queue: Pending[] = [];
  collected: Pending | null = null;
  running: { pending: Pending; abort: AbortController; settled: Promise<void> } | null = null;
  /** Resolved when the queue has nothing running or queued. */
  idleWaiters: Array<() => void> = [];

  /** Every message waiting (queued, then the collected follow-up), removed from the queue. */
  takeWaiting(): Pending[] {
    const waiting = [...this.queue, ...(this.collected ? [this.collected] : [])];
    this.queue = [];
    this.collected = null;
    return waiting;
  }

  /** Fences the session and aborts its running turn (if any); `reason` tells the turn why (TurnStopped: /stop). */
  abortRunning(session: LiveSession, reason: unknown = new Error("interrupted")): void {
    if (!this.running) return;
    session.fence();
    this.running.abort.abort(reason);
  }

  get idle(): boolean {
    return !this.running && this.queue.length === 0 && !this.collected;
  }

  wakeIdleWaiters(): void {
    for (const wake of this.idleWaiters.splice(0)) wake();
  }
}

/** The turn queue of every session that has one. */
export class TurnQueues {
  readonly #queues = new Map<string, TurnQueue>();

  of(sessionId: string): TurnQueue {
    let q = this.#queues.get(sessionId);
    if (!q) {
      q = new TurnQueue();
      this.#queues.set(sessionId, q);
    }
    return q;
  }

  peek(sessionId: string): TurnQueue | undefined {
    return this.#queues.get(sessionId);
  }

  delete(sessionId: string): void {
    this.#queues.delete(sessionId);
  }

  values(): IterableIterator<TurnQueue> {
    return this.#queues.values();
  }

  clear(): void {
    this.#queues.clear();
  }

  get size(): number {
    return this.#queues.size;
  }

  stats(): { running: number; queued: number; collected: number; idleWaiters: number } {
    let running = 0;
    let queued = 0;
    let collected = 0;
    let idleWaiters = 0;
    for (const q of this.#queues.values()) {
      if (q.running) running++;
      queued += q.queue.length;
      if (q.collected) collected++;
      idleWaiters += q.idleWaiters.length;
    }
    return { running, queued, collected, idleWaiters };
  }
}
