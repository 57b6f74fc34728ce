import { describe, expect, it } from "vitest";
import { SHARED_BUDGET_RETRY_MS, SHARED_TOKEN_STALE_MS, SharedBudget } from "../../src/gateway/outbound/shared-budget.js";
import { OutboundScheduler } from "../../src/gateway/outbound/scheduler.js";
import { RateBudgetStore } from "../../src/store/rate-budgets.js";
import { eventually } from "../support/app.js";
import { openTestDb } from "../support/db.js";
import { FaultPlan } from "../support/faults.js";

/** A refill so slow that none comes during the test: what the processes send is the bucket's burst alone. */
const SLOW = 0.001;
const roomyChat = { ratePerSec: 1000, burst: 1000 };

/**
 * The bot-wide budget in shared mode: several processes' schedulers (here
 * two in one process, over one real SQLite file) draw from one bucket in the
 * database, a lease serves the sends waiting together, and a failed lease
 * falls back to the process's own bucket without holding a reply.
 */
describe("a bot-wide send budget shared through the database", () => {
  /** One process's scheduler on the shared bucket; its pump's sleeps are recorded and never end (the refill is 1,000 s away). */
  function processOn(store: RateBudgetStore, limit: { ratePerSec: number; burst: number }, onError: (err: unknown) => void = () => {}) {
    const sleeps: number[] = [];
    // A clock that stands still: a lease that took longer than SHARED_TOKEN_STALE_MS on a busy machine would otherwise
    // find its tokens stale and sleep with nothing sent (this test failed that way under load).
    const now = () => 1_000;
    const budget = new SharedBudget({ key: () => "telegram:42", limit, lease: (k, w, l) => store.lease(k, w, l), onError, now });
    const scheduler = new OutboundScheduler({
      limits: { perChat: roomyChat, global: limit },
      botBudget: budget,
      now,
      sleep: (ms) => {
        sleeps.push(ms);
        return new Promise(() => {});
      },
    });
    return { scheduler, sleeps };
  }

  it("two processes together send what the one bucket holds, and each then waits for the refill", async () => {
    const t = await openTestDb("sqlite");
    try {
      const store = new RateBudgetStore(t.db);
      const limit = { ratePerSec: SLOW, burst: 6 };
      const a = processOn(store, limit);
      const b = processOn(store, limit);
      const sent: string[] = [];
      for (let i = 0; i < 5; i++) {
        void a.scheduler.schedule(`a${i}`, async () => void sent.push(`a${i}`));
        void b.scheduler.schedule(`b${i}`, async () => void sent.push(`b${i}`));
      }
      // Each process has sent all it had, or its pump found the bucket empty and sleeps until the next token
      // (a sleep here never ends): either way what ran by then is all that will.
      const settled = (p: typeof a) => p.scheduler.pending() === 0 || p.sleeps.length > 0;
      await eventually(
        () => settled(a) && settled(b),
        (v) => v,
        10_000,
        "both processes done or waiting",
      );
      expect(sent.length).toBe(6);
      expect(a.scheduler.pending() + b.scheduler.pending()).toBe(4);
      expect(Math.min(...a.sleeps, ...b.sleeps)).toBeGreaterThan(900_000);
    } finally {
      await t.close();
    }
  });

  it("sends waiting together take their tokens in one lease, not one round trip each", async () => {
    const faults = new FaultPlan();
    const t = await openTestDb("sqlite", { faults });
    try {
      const p = processOn(new RateBudgetStore(t.db), { ratePerSec: SLOW, burst: 30 });
      const sends = Array.from({ length: 20 }, (_, i) => p.scheduler.schedule(`chat${i}`, async () => i));
      expect(await Promise.all(sends)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      // The first send's lease, then one for the 19 that queued while it was in flight.
      expect(faults.calls.get("rate-budget-lease")).toBe(2);
    } finally {
      await t.close();
    }
  });

  it("a lease that fails is reported, the send goes out on the local bucket, and the database is asked again after the retry time", async () => {
    const faults = new FaultPlan().once("rate-budget-lease", "SQLITE_FULL");
    const t = await openTestDb("sqlite", { faults });
    try {
      const store = new RateBudgetStore(t.db);
      let clock = 1_000;
      const errors: Array<{ err: unknown; key: string }> = [];
      const budget = new SharedBudget({
        key: () => "telegram:42",
        limit: { ratePerSec: 1, burst: 3 },
        lease: (k, w, l) => store.lease(k, w, l),
        onError: (err, key) => errors.push({ err, key }),
        now: () => clock,
      });
      expect(await budget.take(2)).toEqual({ granted: 1, waitMs: 0 });
      expect(errors).toHaveLength(1);
      expect(errors[0]!.key).toBe("telegram:42");
      // A full disk is a StoreError (Unavailable) naming the driver's code in its cause.
      expect(errors[0]!.err).toMatchObject({ name: "StoreError", code: "Unavailable", cause: { code: "SQLITE_FULL" } });
      // Within the retry time the local bucket paces alone: no statement.
      expect(budget.tryTake()).toBe(true);
      expect(await budget.take(1)).toEqual({ granted: 1, waitMs: 0 });
      expect((await budget.take(1)).granted).toBe(0);
      expect(faults.calls.get("rate-budget-lease")).toBe(1);
      clock += SHARED_BUDGET_RETRY_MS;
      expect(budget.tryTake()).toBe(false);
      expect(await budget.take(2)).toEqual({ granted: 2, waitMs: 0 });
      expect(faults.calls.get("rate-budget-lease")).toBe(2);
    } finally {
      await t.close();
    }
  });

  it("tokens reserved ahead are handed out as they come due, on the process's clock, with no further round trip", async () => {
    const faults = new FaultPlan();
    const t = await openTestDb("sqlite", { faults });
    try {
      const store = new RateBudgetStore(t.db);
      let clock = 0;
      const budget = new SharedBudget({
        key: () => "telegram:7",
        // 10 a second with a burst of 2: a first lease of 5 is due at 0, 0, 100, 200 and 300 ms.
        limit: { ratePerSec: 10, burst: 2 },
        lease: (k, w, l) => store.lease(k, w, l),
        onError: () => {},
        now: () => clock,
      });
      expect(await budget.take(5)).toEqual({ granted: 2, waitMs: 0 });
      expect(await budget.take(3)).toEqual({ granted: 0, waitMs: 100 });
      expect(budget.tryTake()).toBe(false);
      clock = 100;
      expect(budget.tryTake()).toBe(true);
      clock = 200;
      expect(await budget.take(5)).toEqual({ granted: 1, waitMs: 0 });
      // Within SHARED_TOKEN_STALE_MS of its time: still good.
      clock = 300 + SHARED_TOKEN_STALE_MS;
      expect(await budget.take(5)).toEqual({ granted: 1, waitMs: 0 });
      expect(faults.calls.get("rate-budget-lease")).toBe(1);
      // Spent: the next take asks the database again.
      await budget.take(1);
      expect(faults.calls.get("rate-budget-lease")).toBe(2);
    } finally {
      await t.close();
    }
  });

  it("the bucket's key is read at each lease, so a bot id learnt at start gets its own", async () => {
    const t = await openTestDb("sqlite");
    try {
      const store = new RateBudgetStore(t.db);
      let key = "telegram:";
      const budget = new SharedBudget({
        key: () => key,
        limit: { ratePerSec: SLOW, burst: 1 },
        lease: (k, w, l) => store.lease(k, w, l),
        onError: () => {},
        // Standing still: on a busy machine a lease slower than SHARED_TOKEN_STALE_MS would drop its token as stale.
        now: () => 1_000,
      });
      expect((await budget.take(1)).granted).toBe(1);
      expect((await budget.take(1)).granted).toBe(0);
      key = "telegram:99";
      expect((await budget.take(1)).granted).toBe(1);
    } finally {
      await t.close();
    }
  });
});

describe("a leased token whose time passed while the process stalled", () => {
  /** One lease of 25 tokens 40 ms apart (25/s), on a clock the test moves; later leases grant nothing. */
  function stalled() {
    let now = 1_000_000;
    let leases = 0;
    const stale: number[] = [];
    const budget = new SharedBudget({
      key: () => "telegram:42",
      limit: { ratePerSec: 25, burst: 3 },
      lease: async (_k, want) => {
        leases++;
        if (leases > 1) return { granted: 0, dueInMs: [], waitMs: 1000 };
        const n = Math.min(want, 25);
        return { granted: n, dueInMs: Array.from({ length: n }, (_, i) => i * 40), waitMs: 0 };
      },
      onError: () => {},
      onStale: (n) => void stale.push(n),
      now: () => now,
    });
    return { budget, stale, advance: (ms: number) => void (now += ms) };
  }

  it("is dropped, not sent late in a burst beside the other processes' on-time sends", async () => {
    const { budget, stale, advance } = stalled();
    expect(await budget.take(25)).toEqual({ granted: 1, waitMs: 0 });
    // Stopped for 600 ms: 15 more tokens came due meanwhile (40 … 600 ms).
    advance(600);
    const after = await budget.take(25);
    // Only those due within SHARED_TOKEN_STALE_MS of now are spent: 560 and 600 ms.
    expect(SHARED_TOKEN_STALE_MS).toBe(50);
    expect(after).toEqual({ granted: 2, waitMs: 0 });
    expect(stale).toEqual([13]);
    // The rest keep their times.
    expect(budget.tryTake()).toBe(false);
    advance(40);
    expect(budget.tryTake()).toBe(true);
  });

  it("a process that keeps up spends every token it leased", async () => {
    const { budget, stale, advance } = stalled();
    // One lease for all 25 waiting sends; then each is spent as it comes due (a timer firing 30 ms late each time).
    let spent = (await budget.take(25)).granted;
    for (let i = 1; i < 25; i++) {
      advance(i === 1 ? 70 : 40);
      spent += (await budget.take(1)).granted;
    }
    expect(spent).toBe(25);
    expect(stale).toEqual([]);
  });
});

describe("a lease whose answer is slow", () => {
  it("counts its due times from when it asked (the statement's start): the tokens whose time went by on the way are dropped, not sent together", async () => {
    let now = 0;
    const stale: number[] = [];
    const budget = new SharedBudget({
      key: () => "telegram:42",
      limit: { ratePerSec: 25, burst: 1 },
      // The statement starts at once and waits 200 ms for the row's lock behind another process's group.
      lease: async (_k, want) => {
        now += 200;
        const n = Math.min(want, 25);
        return { granted: n, dueInMs: Array.from({ length: n }, (_, i) => i * 40), waitMs: 0 };
      },
      onError: () => {},
      onStale: (n) => void stale.push(n),
      now: () => now,
    });
    // Due at 0, 40, …, 120, 160, 200: at 200, those before 150 are stale; 160 and 200 are still good.
    expect(await budget.take(25)).toEqual({ granted: 2, waitMs: 0 });
    expect(stale).toEqual([4]);
    expect(await budget.take(25)).toEqual({ granted: 0, waitMs: 40 });
  });
});
