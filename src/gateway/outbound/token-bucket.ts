/**
 * A token bucket on an injectable millisecond clock. Refill is computed
 * lazily from elapsed time, so an idle bucket costs nothing and tests can
 * drive it with a fake clock.
 */

// Refill arithmetic is floating point; a wait computed to the millisecond must
// then find a whole token, not 0.9999999.
const EPSILON = 1e-9;

export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    readonly ratePerSec: number,
    readonly burst: number,
    private readonly now: () => number,
  ) {
    if (!(ratePerSec > 0)) throw new RangeError(`TokenBucket: ratePerSec must be > 0, got ${ratePerSec}`);
    if (!Number.isFinite(burst) || burst < 1) throw new RangeError(`TokenBucket: burst must be a finite number >= 1, got ${burst}`);
    this.tokens = burst;
    this.last = now();
  }

  private refill(): void {
    const t = this.now();
    if (t > this.last) {
      this.tokens = Number.isFinite(this.ratePerSec) ? Math.min(this.burst, this.tokens + ((t - this.last) * this.ratePerSec) / 1000) : this.burst;
      this.last = t;
    }
  }

  /** Milliseconds until a token is available; 0 if one is available now. */
  waitMs(): number {
    this.refill();
    if (this.tokens >= 1 - EPSILON) return 0;
    return Math.max(1, Math.ceil(((1 - this.tokens) * 1000) / this.ratePerSec));
  }

  /** Takes one token. Call after waitMs() returned 0; taking early puts the bucket into debt. */
  take(): void {
    this.refill();
    this.tokens -= 1;
  }

  /** Takes a token if one is available now. */
  tryTake(): boolean {
    if (this.waitMs() > 0) return false;
    this.tokens -= 1;
    return true;
  }

  /** True when the bucket has refilled completely, i.e. forgetting it changes nothing. */
  isFull(): boolean {
    this.refill();
    return this.tokens >= this.burst - EPSILON;
  }
}
