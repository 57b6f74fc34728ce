import { sql, type RawBuilder } from "kysely";
import type { Database } from "./db.js";

export interface BudgetLimit {
  ratePerSec: number;
  burst: number;
}

export interface BudgetLease {
  /** Tokens taken, 0 to `want`. */
  granted: number;
  /** For each token taken, in order: milliseconds after the lease when it may be spent (0: at once). */
  dueInMs: number[];
  /** With none granted: milliseconds until a lease can get one. */
  waitMs: number;
}

/** How far ahead a lease may reserve tokens: one second of the rate. */
export const RESERVE_AHEAD_SEC = 1;

// Refill is floating point; a bucket refilled to 0.9999999 of a token holds a token.
const EPSILON = 1e-9;

/**
 * Bot-wide send budgets shared by every process on one database (shared
 * mode): one token bucket row per platform and bot. A lease takes up to
 * `want` tokens in one statement, the refill computed from the database's
 * own clock, so processes on hosts whose clocks disagree still share one
 * budget, and concurrent leases serialize on the row's lock (each refills
 * from what the previous one left).
 *
 * A lease may reserve tokens the bucket will only have within the next
 * second (the bucket goes into debt), each with the time it comes due: so
 * one round trip serves many sends however long the round trip takes under
 * load, while the sends still follow the bucket's rate exactly. A process
 * that dies loses at most the tokens it reserved, one second's worth.
 */
export class RateBudgetStore {
  constructor(readonly db: Database) {}

  async lease(key: string, want: number, limit: BudgetLimit): Promise<BudgetLease> {
    if (!(want >= 1)) throw new RangeError(`RateBudgetStore.lease: want must be >= 1, got ${want}`);
    const { ratePerSec, burst } = limit;
    const debt = ratePerSec * RESERVE_AHEAD_SEC;
    const pg = this.db.provider === "postgresql";
    // The statement's own time: constant within the statement, the same clock for every process.
    const now: RawBuilder<number> = pg
      ? sql<number>`(extract(epoch from statement_timestamp()) * 1000)::float8`
      : sql<number>`((julianday('now') - 2440587.5) * 86400000.0)`;
    const least = pg ? sql.raw("least") : sql.raw("min");
    const greatest = pg ? sql.raw("greatest") : sql.raw("max");
    const refilled = sql<number>`${least}(${burst}, ${sql.ref("RateBudget.tokens")} + ${greatest}(0, ${now} - ${sql.ref("RateBudget.refilledAtMs")}) * ${ratePerSec} / 1000.0)`;
    // refilled + debt is never negative, so SQLite's integer cast (which truncates) is the floor; PostgreSQL's cast rounds.
    const reservable = sql<number>`${refilled} + ${debt} + ${EPSILON}`;
    const whole = pg ? sql<number>`floor(${reservable})` : sql<number>`cast(${reservable} as integer)`;
    const grant = sql<number>`${least}(${want}, ${whole})`;
    const first = Math.min(want, Math.floor(burst + debt + EPSILON));
    const [row] = await this.db.writeReturning(
      "rate-budget-lease",
      this.db.q
        .insertInto("RateBudget")
        .values({ key, tokens: burst - first, refilledAtMs: now, granted: first })
        .onConflict((oc) =>
          oc.column("key").doUpdateSet({
            tokens: sql<number>`${refilled} - ${grant}`,
            refilledAtMs: sql<number>`${greatest}(${now}, ${sql.ref("RateBudget.refilledAtMs")})`,
            granted: grant,
          }),
        )
        .returning(["tokens", "granted"]),
    );
    const granted = Number(row?.granted ?? 0);
    const left = Number(row?.tokens ?? 0);
    // What the bucket held before this lease: the j-th token taken (from 0) is due once the bucket would have held j + 1.
    const held = left + granted;
    const msPerToken = 1000 / ratePerSec;
    const dueInMs = Array.from({ length: granted }, (_, j) => Math.max(0, Math.ceil((j + 1 - held - EPSILON) * msPerToken)));
    return { granted, dueInMs, waitMs: granted > 0 ? 0 : Math.max(1, Math.ceil((1 - left - debt) * msPerToken)) };
  }
}
