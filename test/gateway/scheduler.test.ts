import { describe, expect, it, vi } from "vitest";
import fc from "fast-check";
import { AdapterError } from "../../src/gateway/contract.js";
import { OutboundScheduler, SchedulerClosedError } from "../../src/gateway/outbound/scheduler.js";
import type { SchedulerLimits } from "../../src/gateway/outbound/scheduler-options.js";
import { TokenBucket } from "../../src/gateway/outbound/token-bucket.js";

/** Lets every pending promise chain run (there are no real timers in these tests). */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A virtual clock: sleep() registers a timer that fires only when the test advances time. */
class FakeClock {
  t = 0;
  readonly sleeps: number[] = [];
  private timers: { at: number; seq: number; fire: () => void }[] = [];
  private seq = 0;
  readonly now = () => this.t;
  readonly sleep = (ms: number) =>
    new Promise<void>((fire) => {
      this.sleeps.push(ms);
      this.timers.push({ at: this.t + Math.max(0, ms), seq: this.seq++, fire });
    });

  /** Advances through timers, in time order, until none is due by `until` (default: until none is left). */
  async run(until = Number.POSITIVE_INFINITY): Promise<void> {
    for (let guard = 0; guard < 100_000; guard++) {
      await flush();
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers[0];
      if (!next || next.at > until) {
        if (Number.isFinite(until)) this.t = Math.max(this.t, until);
        await flush();
        return;
      }
      this.t = Math.max(this.t, next.at);
      const due = this.timers.filter((x) => x.at <= this.t);
      this.timers = this.timers.filter((x) => x.at > this.t);
      for (const d of due) d.fire();
    }
    throw new Error("FakeClock.run: too many timers (livelock?)");
  }
}

const rateLimited = (retryAfterMs?: number, scope?: "chat" | "global") =>
  Object.assign(new AdapterError("telegram", "RateLimited", "Too Many Requests: retry after N", retryAfterMs), scope ? { scope } : {});
const transient = () => new AdapterError("telegram", "Transient", "502 Bad Gateway");
const rejected = () => new AdapterError("telegram", "Rejected", "Forbidden: bot was blocked by the user: SECRET TEXT");

const roomy: SchedulerLimits = { perChat: { ratePerSec: 1000, burst: 1000 }, global: { ratePerSec: 1000, burst: 1000 } };

function setup(limits: SchedulerLimits = roomy, extra: { maxTransientRetries?: number } = {}) {
  const clock = new FakeClock();
  const log = { warn: vi.fn(), debug: vi.fn() };
  const onRateLimited = vi.fn();
  const scheduler = new OutboundScheduler({
    limits,
    log,
    now: clock.now,
    sleep: clock.sleep,
    random: () => 0,
    onRateLimited,
    ...extra,
  });
  return { clock, log, onRateLimited, scheduler };
}

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Tracks a promise's state without awaiting it. */
function track<T>(p: Promise<T>) {
  const s: { done: boolean; value?: T; error?: unknown } = { done: false };
  p.then(
    (value) => Object.assign(s, { done: true, value }),
    (error) => Object.assign(s, { done: true, error }),
  );
  return s;
}

describe("OutboundScheduler: ordering and 429s", () => {
  it("keeps per-chat order and drops nothing under a 429 storm (property)", async () => {
    const msg = fc.record({
      chat: fc.integer({ min: 0, max: 2 }),
      fails: fc.integer({ min: 0, max: 3 }),
      retryAfter: fc.integer({ min: 1000, max: 3000 }),
      scope: fc.constantFrom<"chat" | "global">("chat", "chat", "chat", "global"),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(msg, { minLength: 1, maxLength: 25 }), async (msgs) => {
        const { clock, scheduler } = setup({ perChat: { ratePerSec: 1, burst: 2 }, global: { ratePerSec: 30, burst: 30 } });
        const attempts: { chat: number; id: number; at: number; limited?: { until: number; scope: string } }[] = [];
        const delivered: { chat: number; id: number }[] = [];
        const results = msgs.map((m, id) => {
          let tries = 0;
          return scheduler.schedule(`c${m.chat}`, async () => {
            const a: (typeof attempts)[number] = { chat: m.chat, id, at: clock.t };
            attempts.push(a);
            if (tries++ < m.fails) {
              a.limited = { until: clock.t + m.retryAfter, scope: m.scope };
              throw rateLimited(m.retryAfter, m.scope);
            }
            delivered.push({ chat: m.chat, id });
            return id;
          });
        });
        await clock.run();
        expect(await Promise.all(results)).toEqual(msgs.map((_, id) => id));
        // Exactly once each, and in scheduling order within a chat.
        expect(delivered.map((d) => d.id).sort((a, b) => a - b)).toEqual(msgs.map((_, id) => id));
        for (const chat of [0, 1, 2]) {
          const ids = delivered.filter((d) => d.chat === chat).map((d) => d.id);
          expect(ids).toEqual([...ids].sort((a, b) => a - b));
        }
        // Nothing is sent into a retry-after window: the chat's for a chat 429, anyone's for a global one.
        for (const l of attempts.filter((a) => a.limited)) {
          const clash = attempts.find((a) => a.at > l.at && a.at < l.limited!.until && (l.limited!.scope === "global" || a.chat === l.chat));
          expect(clash).toBeUndefined();
        }
        expect(scheduler.pending()).toBe(0);
      }),
      { numRuns: 60 },
    );
  });

  it("never drops an essential call, however many 429s", async () => {
    const { clock, scheduler, onRateLimited } = setup();
    let tries = 0;
    const p = track(
      scheduler.schedule("chat", async () => {
        if (++tries <= 50) throw rateLimited(2000);
        return "sent";
      }),
    );
    await clock.run();
    expect(p).toEqual({ done: true, value: "sent" });
    expect(tries).toBe(51);
    expect(onRateLimited).toHaveBeenCalledTimes(50);
    expect(onRateLimited).toHaveBeenCalledWith({ chatKey: "chat", retryAfterMs: 2000, scope: "chat" });
    expect(clock.t).toBeGreaterThanOrEqual(50 * 2000);
  });

  it("waits behind a 429 for the rest of the chat, but not for other chats", async () => {
    const { clock, scheduler } = setup();
    const calls: string[] = [];
    let first = true;
    void scheduler.schedule("a", async () => {
      calls.push(`a1@${clock.t}`);
      if (first) {
        first = false;
        throw rateLimited(3000);
      }
    });
    void scheduler.schedule("a", async () => void calls.push(`a2@${clock.t}`));
    void scheduler.schedule("b", async () => void calls.push(`b1@${clock.t}`));
    await clock.run();
    // Jitter is random() x 300 ms here, and random() is 0.
    expect(calls).toEqual(["a1@0", "b1@0", "a1@3000", "a2@3000"]);
  });

  it("pauses every chat on a global 429", async () => {
    const { clock, scheduler } = setup();
    const at: Record<string, number> = {};
    let first = true;
    void scheduler.schedule("a", async () => {
      if (first) {
        first = false;
        throw rateLimited(5000, "global");
      }
      at.a = clock.t;
    });
    await flush();
    void scheduler.schedule("b", async () => void (at.b = clock.t));
    await clock.run();
    expect(at).toEqual({ a: 5000, b: 5000 });
  });

  it("falls back to a growing delay when a 429 has no retry_after", async () => {
    const { clock, scheduler } = setup();
    let tries = 0;
    const times: number[] = [];
    void scheduler.schedule("c", async () => {
      times.push(clock.t);
      if (++tries <= 3) throw rateLimited(undefined);
    });
    await clock.run();
    // 1 s, 2 s, 4 s (jitter is 0 with random() = 0).
    expect(times).toEqual([0, 1000, 3000, 7000]);
  });
});

describe("OutboundScheduler: concurrency and pacing", () => {
  it("runs different chats concurrently and one chat one call at a time", async () => {
    const { scheduler } = setup();
    const gate = deferred<string>();
    const started: string[] = [];
    const a1 = track(scheduler.schedule("a", () => (started.push("a1"), gate.promise)));
    const a2 = track(scheduler.schedule("a", async () => void started.push("a2")));
    const b1 = track(scheduler.schedule("b", async () => (started.push("b1"), "b")));
    await flush();
    expect(started).toEqual(["a1", "b1"]);
    expect(b1).toEqual({ done: true, value: "b" });
    expect(a1.done || a2.done).toBe(false);
    expect(scheduler.pending("a")).toBe(2);
    expect(scheduler.pending()).toBe(2);
    gate.resolve("a");
    await flush();
    expect(started).toEqual(["a1", "b1", "a2"]);
    expect(a1.value).toBe("a");
    expect(scheduler.pending()).toBe(0);
  });

  it("paces one chat by its bucket: burst, then the sustained rate", async () => {
    const { clock, scheduler } = setup({ perChat: { ratePerSec: 1, burst: 3 }, global: { ratePerSec: 100, burst: 100 } });
    const times: number[] = [];
    for (let i = 0; i < 8; i++) void scheduler.schedule("c", async () => void times.push(clock.t));
    await clock.run();
    expect(times).toEqual([0, 0, 0, 1000, 2000, 3000, 4000, 5000]);
  });

  it("paces all chats by the global bucket, first come first served", async () => {
    const { clock, scheduler } = setup({ perChat: { ratePerSec: 100, burst: 100 }, global: { ratePerSec: 2, burst: 2 } });
    const sent: string[] = [];
    for (let i = 0; i < 6; i++) void scheduler.schedule(`chat${i}`, async () => void sent.push(`${i}@${clock.t}`));
    await clock.run();
    expect(sent).toEqual(["0@0", "1@0", "2@500", "3@1000", "4@1500", "5@2000"]);
  });

  it("does not let a newcomer take a global token ahead of earlier waiters", async () => {
    const { clock, scheduler } = setup({ perChat: { ratePerSec: 100, burst: 100 }, global: { ratePerSec: 1, burst: 1 } });
    const sent: string[] = [];
    for (const c of ["a", "b", "c"]) void scheduler.schedule(c, async () => void sent.push(c));
    await flush();
    // A token is due now, but the pump that hands it out has not woken yet.
    clock.t = 1000;
    void scheduler.schedule("d", async () => void sent.push("d"));
    await clock.run();
    expect(sent).toEqual(["a", "b", "c", "d"]);
  });

  it("never spends more tokens than burst + rate x elapsed in any window (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 3000 })), { minLength: 1, maxLength: 40 }), async (plan) => {
        const limits = { perChat: { ratePerSec: 2, burst: 2 }, global: { ratePerSec: 5, burst: 3 } };
        const { clock, scheduler } = setup(limits);
        const sent: { chat: number; at: number }[] = [];
        const jobs: Promise<unknown>[] = [];
        for (const [chat, delay] of [...plan].sort((x, y) => x[1] - y[1])) {
          await clock.run(delay);
          jobs.push(scheduler.schedule(`c${chat}`, async () => void sent.push({ chat, at: clock.t })));
        }
        await clock.run();
        await Promise.all(jobs);
        expect(sent).toHaveLength(plan.length);
        const within = (calls: { at: number }[], { ratePerSec, burst }: { ratePerSec: number; burst: number }) => {
          for (const a of calls)
            for (const b of calls) {
              if (b.at < a.at) continue;
              const n = calls.filter((c) => c.at >= a.at && c.at <= b.at).length;
              expect(n).toBeLessThanOrEqual(burst + Math.floor(((b.at - a.at) * ratePerSec) / 1000));
            }
        };
        within(sent, limits.global);
        for (const chat of [0, 1, 2, 3])
          within(
            sent.filter((s) => s.chat === chat),
            limits.perChat,
          );
      }),
      { numRuns: 40 },
    );
  });
});

describe("OutboundScheduler: errors", () => {
  it("retries a transient error with exponential backoff, then succeeds", async () => {
    const { clock, scheduler } = setup();
    let tries = 0;
    const p = track(
      scheduler.schedule("c", async () => {
        if (++tries <= 2) throw transient();
        return 42;
      }),
    );
    await clock.run();
    expect(p).toEqual({ done: true, value: 42 });
    expect(clock.sleeps).toEqual([500, 1000]);
  });

  it("rejects after maxTransientRetries", async () => {
    const { clock, scheduler } = setup(roomy, { maxTransientRetries: 2 });
    let tries = 0;
    const err = transient();
    const p = track(
      scheduler.schedule("c", async () => {
        tries++;
        throw err;
      }),
    );
    await clock.run();
    expect(p).toEqual({ done: true, error: err });
    expect(tries).toBe(3);
  });

  it("rejects a Rejected error at once and keeps the chat's queue moving", async () => {
    const { clock, scheduler } = setup();
    const err = rejected();
    let tries = 0;
    const p1 = track(
      scheduler.schedule("c", async () => {
        tries++;
        throw err;
      }),
    );
    const p2 = track(scheduler.schedule("c", async () => "next"));
    await clock.run();
    expect(p1).toEqual({ done: true, error: err });
    expect(tries).toBe(1);
    expect(p2).toEqual({ done: true, value: "next" });
    expect(clock.sleeps).toEqual([]);
  });

  it("does not retry Unavailable or unknown errors", async () => {
    const { clock, scheduler } = setup();
    const calls = vi.fn(async () => {
      throw new TypeError("boom");
    });
    const unavailable = vi.fn(async () => {
      throw new AdapterError("slack", "Unavailable", "not connected");
    });
    const p1 = track(scheduler.schedule("c", calls));
    const p2 = track(scheduler.schedule("c", unavailable));
    await clock.run();
    expect(p1.error).toBeInstanceOf(TypeError);
    expect((p2.error as AdapterError).code).toBe("Unavailable");
    expect(calls).toHaveBeenCalledTimes(1);
    expect(unavailable).toHaveBeenCalledTimes(1);
  });
});

describe("OutboundScheduler: non-essential calls", () => {
  it("logs a failure with context, not the text, and resolves undefined", async () => {
    const { clock, scheduler, log } = setup();
    const call = vi.fn(async () => {
      throw rejected();
    });
    const p = track(scheduler.schedule("chat-9", call, { essential: false, label: "typing" }));
    await clock.run();
    expect(p).toEqual({ done: true, value: undefined });
    expect(call).toHaveBeenCalledTimes(1);
    expect(log.warn).toHaveBeenCalledTimes(1);
    const [obj] = log.warn.mock.calls[0]!;
    expect(obj).toMatchObject({ chatKey: "chat-9", label: "typing", code: "Rejected" });
    expect(JSON.stringify(obj)).not.toContain("SECRET");
  });

  it("is not retried on a 429, and is dropped while the chat is limited; replies still go out", async () => {
    const { clock, scheduler, onRateLimited } = setup();
    const typing = vi.fn(async () => {
      throw rateLimited(4000);
    });
    const t1 = track(scheduler.schedule("c", typing, { essential: false, label: "typing" }));
    await clock.run(10);
    expect(t1).toEqual({ done: true, value: undefined });
    expect(typing).toHaveBeenCalledTimes(1);
    expect(onRateLimited).toHaveBeenCalledOnce();

    let sentAt = -1;
    const reply = track(scheduler.schedule("c", async () => ((sentAt = clock.t), "ok"), { label: "send" }));
    const again = vi.fn(async () => {});
    const t2 = track(scheduler.schedule("c", again, { essential: false, label: "typing" }));
    await flush();
    // Dropped at once, not after waiting behind the reply.
    expect(t2.done).toBe(true);
    expect(reply.done).toBe(false);
    await clock.run();
    expect(t2).toEqual({ done: true, value: undefined });
    expect(again).not.toHaveBeenCalled();
    expect(reply).toEqual({ done: true, value: "ok" });
    expect(sentAt).toBe(4000);
  });

  it("does not hold up replies queued behind it when it gets dropped in the queue", async () => {
    const { clock, scheduler } = setup();
    let first = true;
    const order: string[] = [];
    void scheduler.schedule("c", async () => {
      order.push(`send1@${clock.t}`);
      if (first) {
        first = false;
        throw rateLimited(2000);
      }
    });
    const typing = vi.fn(async () => void order.push("typing"));
    void scheduler.schedule("c", typing, { essential: false });
    void scheduler.schedule("c", async () => void order.push(`send2@${clock.t}`));
    await clock.run();
    expect(order).toEqual(["send1@0", "send1@2000", "send2@2000"]);
    expect(typing).not.toHaveBeenCalled();
  });
});

describe("OutboundScheduler: lifecycle", () => {
  it("drain() waits for every queued call, whatever its outcome", async () => {
    const { scheduler } = setup();
    await scheduler.drain();
    const gates = [deferred(), deferred(), deferred()];
    void scheduler.schedule("a", () => gates[0]!.promise);
    void scheduler.schedule("a", () => gates[1]!.promise).catch(() => {});
    void scheduler.schedule("b", () => gates[2]!.promise);
    const drained = track(scheduler.drain());
    await flush();
    gates[0]!.resolve();
    gates[2]!.resolve();
    await flush();
    expect(drained.done).toBe(false);
    expect(scheduler.pending()).toBe(1);
    gates[1]!.reject(rejected());
    await flush();
    expect(drained.done).toBe(true);
    expect(scheduler.pending()).toBe(0);
  });

  it("close() refuses new work but lets queued work finish", async () => {
    const { clock, scheduler } = setup();
    const gate = deferred<string>();
    const queued = track(scheduler.schedule("a", () => gate.promise));
    scheduler.close();
    await expect(scheduler.schedule("a", async () => "late")).rejects.toBeInstanceOf(SchedulerClosedError);
    await expect(scheduler.schedule("a", async () => "late", { essential: false })).resolves.toBeUndefined();
    const drained = track(scheduler.drain());
    gate.resolve("done");
    await clock.run();
    expect(queued).toEqual({ done: true, value: "done" });
    expect(drained.done).toBe(true);
  });

  it("rejects impossible limits up front", () => {
    expect(() => new OutboundScheduler({ limits: { ...roomy, perChat: { ratePerSec: 0, burst: 1 } } })).toThrow(RangeError);
    expect(() => new OutboundScheduler({ limits: { ...roomy, global: { ratePerSec: 1, burst: 0 } } })).toThrow(RangeError);
  });
});

describe("TokenBucket", () => {
  it("refills at the rate up to the burst", () => {
    let t = 0;
    const b = new TokenBucket(4, 2, () => t);
    expect([b.tryTake(), b.tryTake(), b.tryTake()]).toEqual([true, true, false]);
    expect(b.waitMs()).toBe(250);
    t = 250;
    expect(b.tryTake()).toBe(true);
    t = 10_000;
    expect(b.isFull()).toBe(true);
    expect([b.tryTake(), b.tryTake(), b.tryTake()]).toEqual([true, true, false]);
  });

  it("gives a whole token after exactly the advertised wait, despite float refill", () => {
    let t = 0;
    const b = new TokenBucket(3, 1, () => t);
    for (let i = 0; i < 100; i++) {
      const w = b.waitMs();
      t += w;
      expect(b.tryTake()).toBe(true);
    }
    expect(t).toBeLessThanOrEqual(100 * 334);
  });
});

describe("OutboundScheduler: holding a chat (one item, several calls)", () => {
  it("a hold's calls run together: work queued meanwhile waits behind the whole hold, and a 429 inside it retries that call only", async () => {
    const { clock, scheduler } = setup();
    const seen: string[] = [];
    let partTries = 0;
    const held = scheduler.hold("c", async (lane) => {
      await lane.call(async () => void seen.push("part 1"));
      await lane.call(async () => {
        if (partTries++ === 0) throw rateLimited(1000);
        seen.push("part 2");
      });
      return lane.call(async () => (seen.push("card"), "card-id"));
    });
    // Queued while the hold waits out its 429: they follow it, in order; another chat is not held up.
    const after = scheduler.schedule("c", async () => void seen.push("after"));
    const other = scheduler.schedule("d", async () => void seen.push("other chat"));
    await clock.run();
    await expect(held).resolves.toBe("card-id");
    await Promise.all([after, other]);
    expect(seen.filter((x) => x !== "other chat")).toEqual(["part 1", "part 2", "card", "after"]);
    expect(seen.indexOf("other chat")).toBeLessThan(seen.indexOf("part 2"));
    expect(partTries).toBe(2);
    expect(scheduler.pending()).toBe(0);
  });

  it("a lane's call made after close() is refused, as schedule() would refuse it; the hold itself was queued and ran", async () => {
    const { clock, scheduler } = setup();
    const gate = deferred();
    const held = track(
      scheduler.hold("c", async (lane) => {
        await lane.call(async () => "first");
        await gate.promise;
        return lane.call(async () => "second");
      }),
    );
    await clock.run();
    scheduler.close();
    gate.resolve();
    await clock.run();
    expect(held.error).toBeInstanceOf(SchedulerClosedError);
    await scheduler.drain();
  });
});
