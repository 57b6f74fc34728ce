import type pg from "pg";
import { afterCommit, commitUnknown, unavailable } from "../call-rules.js";
import type { StoreFaults } from "../db.js";
import type { GroupUnit } from "../group-unit.js";
import { isRetryable, isUnavailable } from "../errors.js";
import type { Sql } from "../sql.js";
import type { PgSql } from "./sql.js";

type Unit = GroupUnit;

/** The most units one group carries; more that arrive together make several groups, run side by side on the pool. */
export const MAX_GROUP_UNITS = 32;

/**
 * PostgreSQL group commit, as on SQLite (sqlite/group-commit.ts): the
 * transactions that arrive in the same turn of the event loop run one after
 * another on one connection of the pool, in one transaction with one
 * COMMIT, so a message's turn costs a share of one commit, not one of its
 * own. No savepoints: when a unit fails, the group is rolled back and runs
 * again without it, so the failed unit leaves nothing behind and the others
 * still commit once. A serialization failure or deadlock retries the whole
 * group (CallRules.retry); a COMMIT sent but not acknowledged fails every
 * unit of the group as CommitUnknown. No caller hears "done" before the
 * COMMIT that holds its writes. Single writes (exec, writeReturning) join
 * the groups too; a lone one autocommits, as before grouping.
 */
export class PgGroupCommit {
  #queue: Unit[] = [];
  #scheduled = false;
  /** Group commits so far and the units they carried (the bench and tests read the grouping). */
  readonly stats = { commits: 0, units: 0 };

  constructor(
    private readonly o: {
      pg: PgSql;
      faults?: StoreFaults;
      /** Retries the group as a whole on serialization failures and deadlocks (CallRules.retry). */
      retry: <T>(op: string, attempt: () => Promise<T>) => Promise<T>;
      /** The onStatement seam of one unit's attempt (CallRules.inject). */
      inject: (op: string) => void;
      /** Refuses work once the handle is closed. */
      refusal: () => Error | undefined;
    },
  ) {}

  run<T>(op: string, fn: (q: Sql) => Promise<T>, single = false): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ op, single, fn, resolve: resolve as (v: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flushAll());
      }
    });
  }

  #flushAll(): void {
    this.#scheduled = false;
    const all = this.#queue;
    this.#queue = [];
    for (let i = 0; i < all.length; i += MAX_GROUP_UNITS) void this.#flush(all.slice(i, i + MAX_GROUP_UNITS));
  }

  async #flush(units: Unit[]): Promise<void> {
    const lone = units.length === 1 && units[0]!.single ? units[0]! : undefined;
    if (lone) return this.#autocommit(lone);
    try {
      const refused = this.o.refusal();
      if (refused) throw refused;
      await this.o.retry(units[0]!.op, () => this.#attempt(units));
    } catch (e) {
      // BEGIN or COMMIT failed, the connection was lost, the database stayed busy: every unit not already failed learns it.
      for (const u of units) u.reject(u.error ?? e);
      return;
    }
    this.stats.commits++;
    this.stats.units += units.length;
    for (const u of units) {
      if (u.error !== undefined) u.reject(u.error);
      else {
        try {
          if (!u.single) afterCommit(this.o.faults, u.op);
          u.resolve(u.result);
        } catch (e) {
          u.reject(e);
        }
      }
    }
  }

  /** A single write alone: one autocommit statement on the pool, retried as before grouping. */
  async #autocommit(u: Unit): Promise<void> {
    try {
      const refused = this.o.refusal();
      if (refused) throw refused;
      u.resolve(await this.o.retry(u.op, () => (this.o.inject(u.op), u.fn(this.o.pg.on(this.o.pg.pool, u.op)))));
    } catch (e) {
      u.reject(e);
    }
  }

  /** The group's tries on one connection: each try runs the units not yet failed; a failed unit is left out and the rest run again. */
  async #attempt(units: Unit[]): Promise<void> {
    const p = this.o.pg;
    const client = await p.pool.connect();
    const state = { commitSent: false };
    let broken: Error | undefined;
    // A connection the server ends mid-group also emits 'error' once its socket closes; the failed
    // statement already carries it to every unit, so it only marks the connection as not to be reused.
    const onError = (err: Error) => {
      broken ??= err;
    };
    client.on("error", onError);
    try {
      // Each try has one unit fewer, so this ends.
      while (
        await this.#try(
          client,
          units.filter((u) => !u.excluded),
          state,
        )
      ) {}
    } catch (e) {
      if (state.commitSent) {
        // Sent and not acknowledged: it may have committed. Every unit in it says so; none is retried.
        broken = e as Error;
        for (const u of units) if (!u.excluded) u.error = commitUnknown(u.op, e);
        return;
      }
      // The transaction is rolled back (or the connection is gone, and with it the transaction).
      await client.query("ROLLBACK").catch((err: Error) => (broken = err));
      throw e;
    } finally {
      client.off("error", onError);
      client.release(broken);
    }
  }

  /** BEGIN, the units, COMMIT. True when a unit failed: its error is kept, the group rolled back, and the caller tries again without it. */
  async #try(client: pg.PoolClient, units: Unit[], state: { commitSent: boolean }): Promise<boolean> {
    if (units.length === 0) return false;
    const p = this.o.pg;
    const faults = this.o.faults;
    for (const u of units) u.error = undefined;
    await p.control(client, "BEGIN", units.length === 1 ? units[0]!.op : "group");
    for (const u of units) {
      let failure: unknown;
      try {
        if (!u.single) faults?.beforeTransaction?.(u.op);
        this.o.inject(u.op);
        u.result = await u.fn(p.on(client, u.op));
      } catch (e) {
        // A serialization failure or deadlock fails the whole group, which is retried as a whole.
        if (isRetryable(e)) throw e;
        // A unit that could not reach the database fails as a call alone would; if the connection is
        // really gone, the ROLLBACK below fails too and with it the whole group.
        failure = isUnavailable(e) ? unavailable(u.op, e) : e;
      }
      if (failure === undefined && !u.single) {
        try {
          faults?.beforeCommit?.(u.op);
        } catch (e) {
          // Its commit "was lost": it is left out, so its writes are never applied.
          failure = commitUnknown(u.op, e);
        }
      }
      if (failure !== undefined) {
        u.error = failure;
        u.excluded = true;
        await client.query("ROLLBACK");
        return true;
      }
    }
    state.commitSent = true;
    await p.control(client, "COMMIT", units.length === 1 ? units[0]!.op : "group");
    return false;
  }
}
