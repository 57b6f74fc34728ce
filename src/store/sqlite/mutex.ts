/**
 * A FIFO async mutex. On SQLite every statement of the process goes through one
 * of these: the better-sqlite3 driver adapter shares a single connection, and a
 * write issued while another caller's transaction is open would join that
 * transaction and be rolled back with it (see test/store/sqlite-interleave.test.ts).
 */
export class Mutex {
  #tail: Promise<void> = Promise.resolve();
  #held = 0;

  get pending(): number {
    return this.#held;
  }

  run<T>(fn: () => Promise<T>): Promise<T> {
    this.#held++;
    const result = this.#tail.then(fn);
    this.#tail = result.then(
      () => {
        this.#held--;
      },
      () => {
        this.#held--;
      },
    );
    return result;
  }
}
