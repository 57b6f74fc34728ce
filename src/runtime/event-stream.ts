import type { OutEvent, OutKind } from "./events.js";

/**
 * A live subscription to a session's events: an async iterable with no
 * replay. Events that arrive before the consumer pulls are buffered (bounded:
 * the oldest are dropped past `capacity`, so a stalled subscriber cannot grow
 * memory without limit).
 */
export class EventStream implements AsyncIterable<OutEvent> {
  readonly #kinds: ReadonlySet<OutKind> | null;
  readonly #buffer: OutEvent[] = [];
  #waiter: ((r: IteratorResult<OutEvent>) => void) | null = null;
  #closed = false;
  dropped = 0;

  constructor(
    kinds: readonly OutKind[],
    private readonly onClose: (s: EventStream) => void,
    private readonly capacity = 1000,
  ) {
    this.#kinds = kinds.length ? new Set(kinds) : null;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Called by the session for every event it emits. */
  push(e: OutEvent): void {
    if (this.#closed || (this.#kinds && !this.#kinds.has(e.kind))) return;
    if (this.#waiter) {
      const w = this.#waiter;
      this.#waiter = null;
      w({ value: e, done: false });
      return;
    }
    if (this.#buffer.length >= this.capacity) {
      this.#buffer.shift();
      this.dropped++;
    }
    this.#buffer.push(e);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onClose(this);
    const w = this.#waiter;
    this.#waiter = null;
    w?.({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<OutEvent>> {
    const e = this.#buffer.shift();
    if (e) return Promise.resolve({ value: e, done: false });
    if (this.#closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => (this.#waiter = resolve));
  }

  [Symbol.asyncIterator](): AsyncIterator<OutEvent> {
    return {
      next: () => this.next(),
      return: () => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  /** A stream that is already closed (subscribing to a closed session). */
  static closedStream(): EventStream {
    const s = new EventStream([], () => {});
    s.close();
    return s;
  }
}
