import type { RateLimit } from "./bot-pace.js";
import { TokenBucket } from "./token-bucket.js";

/** What a take got: tokens (0 to the number asked for), and with none, how long until one may be had. */
export interface BudgetTake {
  granted: number;
  waitMs: number;
}

/**
 * Where a bot's send tokens come from: this process's own bucket, or (shared
 * mode) a bucket in the database every process of the bot draws from.
 */
export interface BotBudget {
  /** One token now, without waiting, if there is one. */
  tryTake(): boolean;
  /** Up to `want` tokens. Synchronous for a local bucket, one database round trip for a shared one. */
  take(want: number): BudgetTake | Promise<BudgetTake>;
}

/** The process's own token bucket: single-process and SQLite. */
export class LocalBudget implements BotBudget {
  readonly #bucket: TokenBucket;

  constructor(limit: RateLimit, now: () => number) {
    this.#bucket = new TokenBucket(limit.ratePerSec, limit.burst, now);
  }

  tryTake(): boolean {
    return this.#bucket.tryTake();
  }

  take(want: number): BudgetTake {
    let granted = 0;
    while (granted < want && this.#bucket.tryTake()) granted++;
    return { granted, waitMs: granted > 0 ? 0 : this.#bucket.waitMs() };
  }
}
