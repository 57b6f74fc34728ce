/** Small timing helpers for the adapter's own loops (long polling, inbound retries). */

export interface Backoff {
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { baseMs: 500, maxMs: 30_000 };

/** Exponential backoff with full jitter, so several gateways recovering together do not retry in lockstep. */
export function backoffMs(b: Backoff, attempt: number): number {
  const cap = Math.min(b.maxMs, b.baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 20));
  return Math.round(cap / 2 + (Math.random() * cap) / 2);
}

/** Resolves after ms, or at once when signal aborts. Never keeps the process alive. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * One abort listener for many concurrent waits on the same signal: `race(p)` is raceAbort
 * without a listener of its own. A batch of getUpdates records its chats in parallel (up to
 * 100 at once); one raceAbort each put that many listeners on the poller's single signal
 * (Node's MaxListenersExceededWarning). `release()` removes the one listener.
 */
export function abortScope<U>(signal: AbortSignal, onAbort: U): { race<T>(p: Promise<T>): Promise<T | U>; release(): void } {
  let fire!: () => void;
  const aborted = new Promise<U>((resolve) => (fire = () => resolve(onAbort)));
  const listener = (): void => fire();
  if (signal.aborted) fire();
  else signal.addEventListener("abort", listener, { once: true });
  return {
    race<T>(p: Promise<T>): Promise<T | U> {
      // The abandoned promise may still reject later; that must not become an unhandled rejection.
      p.catch(() => undefined);
      return Promise.race([p, aborted]);
    },
    release: () => signal.removeEventListener("abort", listener),
  };
}

/** Resolves with `onAbort` as soon as signal aborts, otherwise with p's outcome. */
export function raceAbort<T, U>(p: Promise<T>, signal: AbortSignal, onAbort: U): Promise<T | U> {
  if (signal.aborted) {
    p.catch(() => undefined);
    return Promise.resolve(onAbort);
  }
  return new Promise<T | U>((resolve, reject) => {
    const abort = (): void => {
      // The abandoned promise may still reject later; that must not become an unhandled rejection.
      p.catch(() => undefined);
      resolve(onAbort);
    };
    signal.addEventListener("abort", abort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", abort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", abort);
        reject(e);
      },
    );
  });
}
