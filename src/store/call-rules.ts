import { StoreError, isRetryable, isStorageFault, isUnavailable } from "./errors.js";
import { StoreOutcomes, type StoreHealthReport } from "./health.js";
import type { StoreFaults } from "./db.js";

export const commitUnknown = (op: string, cause: unknown): StoreError =>
  new StoreError("CommitUnknown", `The commit of "${op}" was sent but not acknowledged; re-read to learn its outcome.`, { cause });

/** A call the database refused for its storage (the driver's code and message kept in `cause`). */
export const storageFault = (op: string, cause: unknown): StoreError =>
  new StoreError(
    "Unavailable",
    `The database could not complete "${op}": ${cause instanceof Error ? cause.message : String(cause)}. Check the database's disk (free space, errors); the call is retried.`,
    { cause },
  );

/** A call that could not reach the database, named as every back end names it. */
export const unavailable = (op: string, cause: unknown): StoreError =>
  new StoreError("Unavailable", `The database could not be reached during "${op}". Check DATABASE_URL and that the server is up.`, { cause });

/** Runs the afterCommit hook: throwing there stands for a lost acknowledgement. */
export function afterCommit(faults: StoreFaults | undefined, op: string): void {
  try {
    faults?.afterCommit?.(op);
  } catch (e) {
    throw commitUnknown(op, e);
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref?.());

/**
 * What both back ends do around a call: retry it as a whole with bounded
 * backoff on busy or serialization errors, name what is left (Busy,
 * Unavailable), and feed every outcome to health() and `onFailure`.
 */
export class CallRules {
  readonly #outcomes = new StoreOutcomes();

  constructor(
    private readonly o: {
      maxRetries: number;
      faults: StoreFaults | undefined;
      onFailure: ((op: string, err: unknown) => void) | undefined;
      /** Told of every failed call before `onFailure` (SQLite re-checks its file at once). */
      failed?: () => void;
    },
  ) {}

  get faults(): StoreFaults | undefined {
    return this.o.faults;
  }

  /** The onStatement hook of one attempt of a call. */
  inject(op: string): void {
    this.o.faults?.onStatement?.(op);
  }

  report(): StoreHealthReport {
    return this.#outcomes.report();
  }

  /** Every call's outcome feeds health(); a failure is reported. */
  observe<T>(op: string, p: Promise<T>): Promise<T> {
    return p.then(
      (v) => {
        this.#outcomes.success();
        return v;
      },
      (raw: unknown) => {
        // A full disk or an I/O error is the store's trouble like an unreachable server: a StoreError, so the
        // layers above retry the event (a command's failure is not answered "that command failed").
        const e = !(raw instanceof StoreError) && isStorageFault(raw) ? storageFault(op, raw) : raw;
        this.#outcomes.failure(op, e);
        this.o.failed?.();
        this.o.onFailure?.(op, e);
        throw e;
      },
    );
  }

  async retry<T>(op: string, attempt: () => Promise<T>): Promise<T> {
    for (let i = 0; ; i++) {
      try {
        return await attempt();
      } catch (e) {
        if (e instanceof StoreError) throw e;
        if (isRetryable(e) && i < this.o.maxRetries) {
          await sleep(Math.min(1000, 10 * 2 ** i) * (0.5 + Math.random()));
          continue;
        }
        if (isRetryable(e))
          throw new StoreError("Busy", `The database stayed busy during "${op}" after ${i + 1} attempts; another process may hold a long lock.`, { cause: e });
        if (isUnavailable(e)) throw unavailable(op, e);
        throw e;
      }
    }
  }

  /** One call: observed, retried, each attempt through the onStatement hook first. */
  call<T>(op: string, attempt: () => Promise<T>): Promise<T> {
    return this.observe(
      op,
      this.retry(op, () => (this.inject(op), attempt())),
    );
  }
}

/** Refusal of a closed handle. */
export const closedError = (): StoreError => new StoreError("Unavailable", "The database handle is closed.");
