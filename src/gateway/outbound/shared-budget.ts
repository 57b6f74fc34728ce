import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import type { BudgetLease, RateBudgetStore } from "../../store/rate-budgets.js";
import type { GatewayMetrics } from "../metrics.js";
import type { BotBudget, BudgetTake } from "./bot-budget.js";
import type { RateLimit } from "./bot-pace.js";
import { TokenBucket } from "./token-bucket.js";

export interface SharedBudgetOptions {
  /** The bucket's key, read at each lease: platform:bot (a bot id may be learnt only at start). */
  key: () => string;
  limit: RateLimit;
  /** Takes up to `want` tokens from the shared bucket in one round trip (RateBudgetStore.lease). */
  lease: (key: string, want: number, limit: RateLimit) => Promise<BudgetLease>;
  /** A lease that failed: the caller logs it with its context and counts it. */
  onError: (err: unknown, key: string) => void;
  now: () => number;
  /** Leased tokens dropped unused because their time had passed (the process stalled). */
  onStale?: (n: number) => void;
  /** The most tokens one lease asks for. Default: one second of the rate (what the database lets a lease reserve). */
  maxLease?: number;
}

/** After a failed lease, sends are paced by the local bucket this long before the database is asked again. */
export const SHARED_BUDGET_RETRY_MS = 5_000;

/**
 * A leased token not used within this long of its due time is dropped. A
 * process that stalled (a busy machine, a long GC) must not spend, all at
 * once, tokens that came due while it was stopped: the other processes sent
 * theirs on time, and together they would pass the platform's limit. With a
 * bucket of rate r and burst b, sends in any second are then at most
 * r × (1 + STALE) + b (Telegram's 20/s and 1: 22).
 */
export const SHARED_TOKEN_STALE_MS = 50;

/**
 * A bot-wide budget shared through the database (shared mode). The pump
 * asks for as many tokens as it has sends waiting (at most `maxLease`) in
 * one round trip; the database answers with each token's due time (a lease
 * may reserve up to a second ahead: rate-budgets.ts), and this process
 * hands each out when it comes due, on its own clock from when it asked
 * (a token whose time passed on the way is dropped). A process asks
 * again only once what it was given is spent, and never holds tokens it has
 * no send for. When the database fails, it paces by its own bucket of the
 * same limit for a few seconds (a 429 from the platform is still waited
 * out), rather than holding every reply until the database is back.
 */
export class SharedBudget implements BotBudget {
  readonly #fallback: TokenBucket;
  readonly #maxLease: number;
  /** Local times at which the tokens leased and not yet spent come due, in order. */
  readonly #due: number[] = [];
  #localUntil = 0;

  constructor(private readonly opts: SharedBudgetOptions) {
    this.#fallback = new TokenBucket(opts.limit.ratePerSec, opts.limit.burst, opts.now);
    this.#maxLease = Math.max(1, Math.floor(opts.maxLease ?? Math.max(opts.limit.burst, opts.limit.ratePerSec)));
  }

  tryTake(): boolean {
    this.#dropStale();
    if (this.#due.length > 0 && this.#due[0]! <= this.opts.now()) {
      this.#due.shift();
      return true;
    }
    return this.#due.length === 0 && this.#onFallback() && this.#fallback.tryTake();
  }

  async take(want: number): Promise<BudgetTake> {
    this.#dropStale();
    if (this.#due.length === 0) {
      if (this.#onFallback()) return this.#takeLocal();
      const key = this.opts.key();
      try {
        const asked = this.opts.now();
        const got = await this.opts.lease(key, Math.min(want, this.#maxLease), this.opts.limit);
        if (got.granted === 0) return { granted: 0, waitMs: got.waitMs };
        // The due times count from the statement's start (its statement_timestamp), just after the question
        // left, however long it then waited for the row's lock behind another process's group: counted from
        // the answer's arrival, that wait pushed this process's sends onto the others' (34 in one second). A
        // token whose time went by on the way is stale at once.
        const at = asked;
        for (const ms of got.dueInMs) this.#due.push(at + ms);
        this.#dropStale();
      } catch (err) {
        this.opts.onError(err, key);
        this.#localUntil = this.opts.now() + SHARED_BUDGET_RETRY_MS;
        return this.#takeLocal();
      }
    }
    const now = this.opts.now();
    let granted = 0;
    while (granted < want && this.#due.length > 0 && this.#due[0]! <= now) {
      this.#due.shift();
      granted++;
    }
    if (granted > 0) return { granted, waitMs: 0 };
    // Every token of a slow lease was stale: ask again at once.
    return { granted: 0, waitMs: this.#due.length > 0 ? Math.max(1, this.#due[0]! - now) : 1 };
  }

  /** Tokens whose time passed while this process could not use them are gone (SHARED_TOKEN_STALE_MS), counted. */
  #dropStale(): void {
    const oldest = this.opts.now() - SHARED_TOKEN_STALE_MS;
    let n = 0;
    while (this.#due.length > 0 && this.#due[0]! < oldest) {
      this.#due.shift();
      n++;
    }
    if (n > 0) this.opts.onStale?.(n);
  }

  #onFallback(): boolean {
    return this.opts.now() < this.#localUntil;
  }

  #takeLocal(): BudgetTake {
    if (this.#fallback.tryTake()) return { granted: 1, waitMs: 0 };
    // Never past the retry time: the database is asked again then.
    return { granted: 0, waitMs: Math.min(this.#fallback.waitMs(), Math.max(1, this.#localUntil - this.opts.now())) };
  }
}

/** The shared budget of one bot (platform:bot), its failed leases logged and counted. */
export function sharedBudgetOf(
  bot: { platform: string; key: () => string; limit: RateLimit },
  deps: { budgets: RateBudgetStore; log: Logger; metrics: GatewayMetrics },
): SharedBudget {
  return new SharedBudget({
    key: bot.key,
    limit: bot.limit,
    lease: (key, want, limit) => deps.budgets.lease(key, want, limit),
    onError: (err, key) => {
      deps.metrics.internalErrors.inc({ where: "rate-budget" });
      deps.log.warn(
        { err: errInfo(err), budget: key, platform: bot.platform },
        "the shared send budget could not be leased; this process paces the bot by its own bucket for a few seconds",
      );
    },
    onStale: (n) => deps.metrics.sendTokensStale.inc({ platform: bot.platform }, n),
    now: Date.now,
  });
}
