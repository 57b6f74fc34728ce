import { StoreError, isRetryable, isUnavailable } from "../errors.js";
import { afterCommit, commitUnknown } from "../call-rules.js";
import type { StoreFaults } from "../db.js";
import type { GroupUnit } from "../group-unit.js";
import type { Sql } from "../sql.js";
import type { SqliteSql } from "./sql.js";

type Unit = GroupUnit;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref?.());

/**
 * SQLite group commit. Raw writes and raw transactions that arrive in the
 * same turn of the event loop share one transaction and one COMMIT: a
 * commit costs about as much as all the statements of a message together.
 * No savepoints: when a unit fails, the whole group is rolled back and runs
 * again without it, so a failing unit leaves nothing behind and the others
 * still commit (failures are rare; savepoints cost two statements per unit
 * on every commit). A group of one single-statement write runs in
 * autocommit, which is the same atomic, durable commit without BEGIN and
 * COMMIT. No caller hears "done" before the commit that holds its write.
 */
export class GroupCommit {
  readonly #queue: Unit[] = [];
  #scheduled = false;
  /** Group commits so far and the units they carried (benchmarks report the grouping). */
  readonly stats = { commits: 0, units: 0 };

  constructor(
    private readonly o: {
      sql: SqliteSql;
      /** Runs `fn` holding the database's mutex (rejects once the handle is closed). */
      exclusive: <T>(fn: () => Promise<T>) => Promise<T>;
      faults?: StoreFaults;
      /** How long a group keeps retrying while another process holds the lock. */
      busyBudgetMs: number;
      /** Told after every commit (the WAL checkpointer counts them). */
      committed?: () => void;
    },
  ) {}

  run<T>(op: string, fn: (q: Sql) => Promise<T>, single = false): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ op, single, fn, resolve: resolve as (v: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => void this.#flush());
      }
    });
  }

  async #flush(): Promise<void> {
    const t0 = Date.now();
    let units: Unit[] | undefined;
    // Units that arrive while this waits for the mutex join the group; later ones schedule the next.
    const take = () => {
      this.#scheduled = false;
      return this.#queue.splice(0);
    };
    for (let i = 0; ; i++) {
      let busy: unknown;
      try {
        busy = await this.o.exclusive(async () => {
          units ??= take();
          try {
            await this.#attempt(units);
            return undefined;
          } catch (e) {
            if (!isRetryable(e)) throw e;
            return e;
          }
        });
      } catch (e) {
        // A closed handle, or BEGIN/COMMIT failing for another reason: every unit learns it.
        units ??= take();
        const err = isUnavailable(e)
          ? new StoreError("Unavailable", "The SQLite database could not be written. Check DATABASE_URL and the file's permissions.", { cause: e })
          : e;
        for (const u of units) u.reject(err);
        return;
      }
      if (busy === undefined) break;
      if (Date.now() - t0 > this.o.busyBudgetMs) {
        const err = new StoreError(
          "Busy",
          `The database stayed busy during "${units![0]?.op ?? "write"}" for ${Date.now() - t0} ms; another process may hold a long lock.`,
          { cause: busy },
        );
        for (const u of units!) u.reject(err);
        return;
      }
      await sleep(Math.min(200, 5 * 2 ** i) * (0.5 + Math.random()));
    }
    for (const u of units!) {
      if (u.error !== undefined) u.reject(u.error);
      else {
        try {
          afterCommit(this.o.faults, u.op);
          u.resolve(u.result);
        } catch (e) {
          u.reject(e);
        }
      }
    }
  }

  /**
   * A one-statement unit: a statement that fails is undone by SQLite alone, and the
   * transaction goes on, unless SQLite rolled the whole transaction back
   * (a full disk, an I/O error): then the group fails and nothing is
   * acknowledged. Its lost-commit seam runs before the statement, so a
   * "lost" write is never applied (the same outcome as rolling it back).
   */
  async #single(u: Unit, autocommit = false): Promise<void> {
    const faults = this.o.faults;
    try {
      faults?.beforeTransaction?.(u.op);
      faults?.onStatement?.(u.op);
    } catch (e) {
      if (isRetryable(e)) throw e;
      u.error = e;
      return;
    }
    try {
      faults?.beforeCommit?.(u.op);
    } catch (e) {
      u.error = commitUnknown(u.op, e);
      return;
    }
    try {
      this.o.sql.op = u.op;
      u.result = await u.fn(this.o.sql.sql);
    } catch (e) {
      // Busy fails the whole group, which is retried; so does a transaction SQLite already rolled back.
      if (isRetryable(e) || (!autocommit && !this.o.sql.inTransaction)) throw e;
      u.error = e;
    }
  }

  async #attempt(units: Unit[]): Promise<void> {
    const live = units.filter((u) => !u.excluded);
    if (live.length === 1 && live[0]!.single) {
      live[0]!.error = undefined;
      this.o.sql.op = live[0]!.op;
      await this.#single(live[0]!, true);
    } else {
      // A failed unit is left out and the rest run again (each try has one unit fewer, so this ends).
      while (await this.#try(units.filter((u) => !u.excluded))) {}
    }
    this.stats.commits++;
    this.stats.units += units.length;
    this.o.committed?.();
  }

  /**
   * One try at a group: BEGIN IMMEDIATE, the units, COMMIT. Returns true when
   * a unit failed: its error is kept, the group rolled back, and the caller
   * tries again without it. Throws a retryable error when another process
   * holds the lock (the whole group is retried).
   */
  async #try(units: Unit[]): Promise<boolean> {
    if (units.length === 0) return false;
    for (const u of units) u.error = undefined;
    const s = this.o.sql;
    const faults = this.o.faults;
    // IMMEDIATE takes the write lock up front: no upgrade deadlock with another process.
    s.control("BEGIN IMMEDIATE");
    try {
      for (const u of units) {
        s.op = u.op;
        if (u.single) {
          await this.#single(u);
          continue;
        }
        let failure: unknown;
        try {
          faults?.beforeTransaction?.(u.op);
          faults?.onStatement?.(u.op);
          u.result = await u.fn(s.sql);
        } catch (e) {
          // A busy database fails the whole group, which is retried (as a busy BEGIN IMMEDIATE is); so
          // does a transaction SQLite already rolled back by itself.
          if (isRetryable(e) || !s.inTransaction) throw e;
          failure = e;
        }
        if (failure === undefined) {
          try {
            faults?.beforeCommit?.(u.op);
          } catch (e) {
            failure = commitUnknown(u.op, e);
          }
        }
        if (failure !== undefined) {
          u.error = failure;
          u.excluded = true;
          s.control("ROLLBACK");
          return true;
        }
      }
      s.control("COMMIT");
      return false;
    } catch (e) {
      // Synchronous: a failed COMMIT did not commit. Roll back; the caller retries the group.
      try {
        s.control("ROLLBACK");
      } catch {
        // no transaction left to roll back
      }
      throw e;
    }
  }
}
