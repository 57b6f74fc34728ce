import { isAdapterError } from "../contract.js";
import type { BotBudget } from "./bot-budget.js";

export interface RateLimit {
  ratePerSec: number;
  burst: number;
}

export const MAX_BACKOFF_MS = 30_000;
/** When a 429 comes without retry_after: 1 s, doubling per consecutive 429, capped. */
const DEFAULT_RETRY_AFTER_MS = 1_000;

/** How long a 429 says to wait: its retry_after when it gives a usable one, else the default doubled per 429 in a row. */
export function retryAfterOf(err: unknown, rateLimitsInARow: number): number {
  const given = isAdapterError(err) ? err.retryAfterMs : undefined;
  return given !== undefined && Number.isFinite(given) && given >= 0 ? given : Math.min(MAX_BACKOFF_MS, DEFAULT_RETRY_AFTER_MS * 2 ** (rateLimitsInARow - 1));
}

/**
 * The bot-wide budget of one adapter: where its tokens come from (the
 * process's bucket, or the database's in shared mode: bot-budget.ts) and the
 * pause a bot-wide 429 sets. Tokens are handed out first come, first served
 * by one pump, so a busy chat can't starve the others and waiting chats don't
 * all wake and race for each token; the pump asks for as many as are
 * waiting, so a shared budget is one round trip for several sends.
 */
export class BotPace {
  #pausedUntil = 0;
  readonly #waiters: Array<() => void> = [];
  #pumping = false;

  constructor(
    private readonly budget: BotBudget,
    private readonly now: () => number,
    private readonly sleep: (ms: number) => Promise<void>,
  ) {}

  get pausedUntil(): number {
    return this.#pausedUntil;
  }

  /** Pauses only ever extend. */
  pauseUntil(t: number): void {
    this.#pausedUntil = Math.max(this.#pausedUntil, t);
  }

  acquire(): Promise<void> {
    if (this.#waiters.length === 0 && this.#pausedUntil <= this.now() && this.budget.tryTake()) return Promise.resolve();
    return new Promise((resolve) => {
      this.#waiters.push(resolve);
      void this.#pump();
    });
  }

  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (this.#waiters.length > 0) {
        const paused = this.#pausedUntil - this.now();
        if (paused > 0) {
          await this.sleep(paused);
          continue;
        }
        const taking = this.budget.take(this.#waiters.length);
        // A local bucket answers at once: no await, so its pacing stays as tight as before.
        const { granted, waitMs } = taking instanceof Promise ? await taking : taking;
        for (let i = 0; i < granted; i++) this.#waiters.shift()!();
        if (granted === 0) await this.sleep(waitMs);
      }
    } finally {
      this.#pumping = false;
    }
  }
}
