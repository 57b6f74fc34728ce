const settle = (): void => undefined;

/**
 * Work run one at a time per key, in the order it was queued; different keys
 * run concurrently. A key holds state only while it has work queued or
 * running, so the map stays as small as the number of busy keys. One job's
 * failure never stops the next one of its key (the caller gets the failure).
 *
 * The one per-key queue of the code base: a chat's inbound events, a chat's
 * replies, a session's intake.
 */
export class KeyedQueue<K = string> {
  readonly #tails = new Map<K, Promise<void>>();

  /**
   * Runs `fn` once every job queued before it under `key` has settled, and
   * `after` too (when given; it may reject, `fn` runs anyway).
   */
  run<T>(key: K, fn: () => T | Promise<T>, after?: Promise<unknown>): Promise<T> {
    const prev = this.#tails.get(key);
    const ready = after ? Promise.all([prev, after.then(settle, settle)]) : (prev ?? Promise.resolve());
    const result = ready.then(fn);
    const tail = result.then(settle, settle);
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }

  /** Whether `key` has work queued or running. */
  busy(key: K): boolean {
    return this.#tails.has(key);
  }

  /** Keys with work queued or running. */
  get size(): number {
    return this.#tails.size;
  }

  /** Resolves once no key has work queued or running (work queued meanwhile included). */
  async idle(): Promise<void> {
    while (this.#tails.size) await Promise.all([...this.#tails.values()]);
  }
}
