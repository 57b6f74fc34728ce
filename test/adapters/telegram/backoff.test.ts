/**
 * The Telegram adapter's retry timing (getUpdates failures and inbound
 * retries both wait `sleep(backoffMs(backoff, attempt))`): exponential from
 * the base, capped, with full jitter between half and all of the cap; and a
 * sleep that ends on time or at once on abort. On fake timers.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { backoffMs, DEFAULT_BACKOFF, sleep } from "../../../adapters/telegram/util.js";

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("Telegram retry backoff", () => {
  it("doubles from the base to the cap, jittered between half and all of it", () => {
    const b = { baseMs: 500, maxMs: 30_000 };
    const random = vi.spyOn(Math, "random");
    const at = (r: number, attempt: number) => {
      random.mockReturnValue(r);
      return backoffMs(b, attempt);
    };
    const caps = [500, 500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000];
    for (const [attempt, cap] of caps.entries()) {
      expect(at(0, attempt), `attempt ${attempt}, least`).toBe(cap / 2);
      expect(at(0.999_999, attempt), `attempt ${attempt}, most`).toBe(cap);
    }
    // A huge attempt count neither overflows nor passes the cap.
    expect(at(0.999_999, 10_000)).toBe(30_000);
    expect(DEFAULT_BACKOFF).toEqual(b);
  });

  it("sleep ends at its time, not before; an abort ends it at once", async () => {
    vi.useFakeTimers();
    let done = false;
    const p = sleep(1000).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await p;
    expect(done).toBe(true);

    const ac = new AbortController();
    let woke = false;
    const q = sleep(60_000, ac.signal).then(() => (woke = true));
    await vi.advanceTimersByTimeAsync(10);
    expect(woke).toBe(false);
    ac.abort();
    await q;
    expect(woke).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
    // Already aborted: no timer at all.
    await sleep(60_000, ac.signal);
    expect(vi.getTimerCount()).toBe(0);
  });
});
