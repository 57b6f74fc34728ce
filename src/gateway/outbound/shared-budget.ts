import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import type { RateBudgetStore } from "../../store/rate-budgets.js";
import type { GatewayMetrics } from "../metrics.js";
import type { BotBudget, BudgetTake } from "./bot-budget.js";
import type { RateLimit } from "./bot-pace.js";
import { TokenBucket } from "./token-bucket.js";

export interface SharedBudgetOptions {
  /** The bucket's key, read at each lease: platform:bot (a bot id may be learnt only at start). */
  key: () => string;
  limit: RateLimit;
  /** Takes up to `want` tokens from the shared bucket in one round trip (RateBudgetStore.lease). */
  lease: (key: string, want: number, limit: RateLimit) => Promise<BudgetTake>;
  /** A lease that failed: the caller logs it with its context and counts it. */
  onError: (err: unknown, key: string) => void;
  now: () => number;
  /** The most tokens one lease asks for. Default: the bucket's burst. */
  maxLease?: number;
}

/** After a failed lease, sends are paced by the local bucket this long before the database is asked again. */
export const SHARED_BUDGET_RETRY_MS = 5_000;

/**
 * A bot-wide budget shared through the database (shared mode): the pump asks
 * for as many tokens as it has sends waiting (at most `maxLease`) in one
 * round trip, and hands them out at once, so under load one lease serves
 * several sends while a process never holds tokens it has no send for (a
 * process that dies loses at most the sends it was making). When the
 * database fails, the process falls back to pacing by its own bucket of
 * the same limit (a 429 from the platform is still waited out), rather
 * than holding every reply until the database is back.
 */
export class SharedBudget implements BotBudget {
  readonly #fallback: TokenBucket;
  readonly #maxLease: number;
  #localUntil = 0;

  constructor(private readonly opts: SharedBudgetOptions) {
    this.#fallback = new TokenBucket(opts.limit.ratePerSec, opts.limit.burst, opts.now);
    this.#maxLease = Math.max(1, Math.floor(opts.maxLease ?? opts.limit.burst));
  }

  tryTake(): boolean {
    return this.#onFallback() && this.#fallback.tryTake();
  }

  async take(want: number): Promise<BudgetTake> {
    if (this.#onFallback()) return this.#takeLocal();
    const key = this.opts.key();
    try {
      const got = await this.opts.lease(key, Math.min(want, this.#maxLease), this.opts.limit);
      return { granted: Math.min(got.granted, want), waitMs: got.waitMs };
    } catch (err) {
      this.opts.onError(err, key);
      this.#localUntil = this.opts.now() + SHARED_BUDGET_RETRY_MS;
      return this.#takeLocal();
    }
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
    now: Date.now,
  });
}
