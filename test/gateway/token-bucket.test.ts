import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { TokenBucket } from "../../src/gateway/outbound/token-bucket.js";

/** The bucket on vitest's fake clock: refill is judged by simulated time, never by how busy the machine is. */
describe("TokenBucket on fake timers", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("gives its burst at once, then one token per 1/rate seconds, never more than the burst", () => {
    const b = new TokenBucket(2, 3, () => Date.now());
    expect([b.tryTake(), b.tryTake(), b.tryTake(), b.tryTake()]).toEqual([true, true, true, false]);
    expect(b.waitMs()).toBe(500);
    vi.advanceTimersByTime(499);
    expect(b.tryTake()).toBe(false);
    vi.advanceTimersByTime(1);
    expect(b.tryTake()).toBe(true);
    vi.advanceTimersByTime(60_000); // an hour idle refills to the burst, not beyond
    expect(b.isFull()).toBe(true);
    expect([b.tryTake(), b.tryTake(), b.tryTake(), b.tryTake()]).toEqual([true, true, true, false]);
  });

  it("a take() in debt is paid back before the next token", () => {
    const b = new TokenBucket(1, 1, () => Date.now());
    b.take();
    b.take(); // one token of debt
    expect(b.waitMs()).toBe(2000);
    vi.advanceTimersByTime(1999);
    expect(b.waitMs()).toBe(1);
    vi.advanceTimersByTime(1);
    expect(b.waitMs()).toBe(0);
  });

  it("a wait computed to the millisecond finds a whole token (no 0.9999 left by float refill)", () => {
    const b = new TokenBucket(3, 1, () => Date.now());
    b.take();
    const wait = b.waitMs();
    expect(wait).toBe(334);
    vi.advanceTimersByTime(wait);
    expect(b.tryTake()).toBe(true);
  });
});
