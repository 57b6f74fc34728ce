import { expect, it } from "vitest";
import { RateBudgetStore } from "../../src/store/rate-budgets.js";
import type { TestDb, TestProvider } from "../support/db.js";

/** A refill so slow that the test's own run time adds no whole token: what a lease grants is the burst alone. */
const SLOW = 0.001;

/**
 * The shared send budget on a real database of `provider`: a lease takes
 * at most what the bucket holds, concurrent leases never share out more
 * than it holds, the refill comes from elapsed database time, and buckets
 * of different bots are apart.
 */
export function rateBudgetCases(provider: TestProvider, open: () => Promise<TestDb>): void {
  it(`a lease takes up to what the bucket holds, then none with the wait for the next token (${provider})`, async () => {
    const t = await open();
    try {
      const s = new RateBudgetStore(t.db);
      const limit = { ratePerSec: SLOW, burst: 5 };
      expect(await s.lease("telegram:1", 3, limit)).toEqual({ granted: 3, dueInMs: [0, 0, 0], waitMs: 0 });
      expect(await s.lease("telegram:1", 3, limit)).toEqual({ granted: 2, dueInMs: [0, 0], waitMs: 0 });
      const empty = await s.lease("telegram:1", 1, limit);
      expect(empty.granted).toBe(0);
      // One token at 0.001/s is 1,000 s away, less what the run has refilled.
      expect(empty.waitMs).toBeGreaterThan(900_000);
      expect(empty.waitMs).toBeLessThanOrEqual(1_000_000);
      // Another bot's bucket is untouched; a first lease asking more than the burst gets the burst.
      expect(await s.lease("telegram:2", 9, limit)).toEqual({ granted: 5, dueInMs: [0, 0, 0, 0, 0], waitMs: 0 });
      expect((await s.lease("slack:1", 1, limit)).granted).toBe(1);
    } finally {
      await t.close();
    }
  });

  it(`leases racing for one bucket share out exactly what it holds (${provider})`, async () => {
    const t = await open();
    try {
      const s = new RateBudgetStore(t.db);
      const limit = { ratePerSec: SLOW, burst: 12 };
      const got = await Promise.all(Array.from({ length: 20 }, () => s.lease("discord:9", 2, limit)));
      expect(got.reduce((n, g) => n + g.granted, 0)).toBe(12);
      expect(got.every((g) => g.granted <= 2)).toBe(true);
    } finally {
      await t.close();
    }
  });

  it(`a lease reserves up to a second ahead, each token due when the bucket would hold it (${provider})`, async () => {
    const t = await open();
    try {
      const s = new RateBudgetStore(t.db);
      // 10 a second, a burst of 2: the first 2 at once, then one every 100 ms, up to 10 more (one second) in debt.
      const limit = { ratePerSec: 10, burst: 2 };
      const started = Date.now();
      expect(await s.lease("telegram:5", 5, limit)).toEqual({ granted: 5, dueInMs: [0, 0, 100, 200, 300], waitMs: 0 });
      // The next lease queues behind those, whatever it asks: the burst and one second in all (2 + 10), plus what the run refilled.
      const next = await s.lease("telegram:5", 50, limit);
      const refilledAtMost = Math.ceil((Date.now() - started) / 100) + 1;
      expect(next.granted).toBeGreaterThanOrEqual(7);
      expect(next.granted).toBeLessThanOrEqual(7 + refilledAtMost);
      // Its first token is due after the three reserved before it (less the time the run took, refilling the bucket).
      expect(next.dueInMs[0]).toBeLessThanOrEqual(400);
      expect(next.dueInMs[next.granted - 1]).toBeGreaterThan(next.dueInMs[0]!);
      // All of the next second is reserved: a third lease gets nothing and the wait for the debt to come back within a second.
      const none = await s.lease("telegram:5", 1, limit);
      if (none.granted === 0) expect(none.waitMs).toBeGreaterThan(0);
      expect(none.granted).toBeLessThanOrEqual(1);
    } finally {
      await t.close();
    }
  });

  it(`the bucket refills by elapsed time, up to its burst (${provider})`, async () => {
    const t = await open();
    try {
      const s = new RateBudgetStore(t.db);
      // A million tokens a second: a millisecond between two statements (SQLite's clock resolution) refills the bucket whole.
      const limit = { ratePerSec: 1e6, burst: 4 };
      expect((await s.lease("telegram:3", 4, limit)).dueInMs).toEqual([0, 0, 0, 0]);
      let dueInMs: number[] = [-1];
      for (let i = 0; i < 50 && !dueInMs.every((ms) => ms === 0); i++) dueInMs = (await s.lease("telegram:3", 4, limit)).dueInMs;
      expect(dueInMs).toEqual([0, 0, 0, 0]);
    } finally {
      await t.close();
    }
  });

  it(`a lease asks for at least one token (${provider})`, async () => {
    const t = await open();
    try {
      await expect(new RateBudgetStore(t.db).lease("telegram:4", 0, { ratePerSec: 1, burst: 1 })).rejects.toThrow(RangeError);
    } finally {
      await t.close();
    }
  });
}
