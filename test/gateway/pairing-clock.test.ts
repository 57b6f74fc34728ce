/**
 * The pairing code's TTL and the per-sender throttle on the gateway's own
 * clock: `Pairing` without an injected `now`, as the gateway builds it, under
 * vitest's fake Date, checked at the millisecond on each side of each limit
 * (SQLite; pairing.pg.test.ts runs the same rules on both providers).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Pairing, PAIRING_MIN_INTERVAL_MS, PAIRING_TTL_MS } from "../../src/gateway/inbound/pairing.js";
import { AccessStore } from "../../src/store/index.js";
import { openTestDb, type TestDb } from "../support/db.js";

const T0 = Date.parse("2026-03-01T09:00:00Z");
let t: TestDb;
let p: Pairing;
const req = (senderId: string) => p.request({ platform: "telegram", botId: "b", senderId });
const codeOf = (r: Awaited<ReturnType<typeof req>>): string => {
  if (r.kind !== "code") throw new Error(`expected a code, got ${JSON.stringify(r)}`);
  return r.code;
};

beforeEach(async () => {
  t = await openTestDb("sqlite");
  p = new Pairing(new AccessStore(t.db));
  // Only Date: the database driver's own timers and I/O run as usual.
  vi.useFakeTimers({ toFake: ["Date"], now: T0 });
});
afterEach(async () => {
  vi.useRealTimers();
  await t.close();
});

describe("pairing on the gateway's clock", () => {
  it("a code is approvable until the last millisecond of its hour and expired from the hour on", async () => {
    const early = await req("early");
    const late = await req("late");
    expect(early).toMatchObject({ kind: "code", expiresAt: new Date(T0 + PAIRING_TTL_MS) });
    vi.setSystemTime(T0 + PAIRING_TTL_MS - 1);
    expect((await p.list()).map((r) => r.senderId)).toEqual(["early", "late"]);
    expect(await p.approve(codeOf(early))).toMatchObject({ senderId: "early", status: "approved" });
    vi.setSystemTime(T0 + PAIRING_TTL_MS);
    expect(await p.list()).toEqual([]);
    expect(await p.approve(codeOf(late))).toBe("expired");
    expect(await p.store.isGranted("telegram", "b", "early")).toBe(true);
    expect(await p.store.isGranted("telegram", "b", "late")).toBe(false);
  });

  it("asking again while the code lives gives the same code, however often; once it expired a new one", async () => {
    const first = codeOf(await req("a"));
    for (const at of [1, 60_000, PAIRING_MIN_INTERVAL_MS, PAIRING_TTL_MS - 1]) {
      vi.setSystemTime(T0 + at);
      expect(await req("a")).toMatchObject({ kind: "code", code: first, reused: true });
    }
    vi.setSystemTime(T0 + PAIRING_TTL_MS);
    const second = await req("a");
    expect(second).toMatchObject({ kind: "code", reused: false, expiresAt: new Date(T0 + 2 * PAIRING_TTL_MS) });
    expect(codeOf(second)).not.toBe(first);
  });

  it("a sender whose code was pushed out is throttled until exactly ten minutes after its request", async () => {
    await req("a");
    for (const [i, s] of ["x", "y", "z"].entries()) {
      vi.setSystemTime(T0 + 1000 * (i + 1));
      await req(s);
    }
    expect((await p.list()).map((r) => r.senderId)).toEqual(["x", "y", "z"]);
    const retryAt = new Date(T0 + PAIRING_MIN_INTERVAL_MS);
    vi.setSystemTime(T0 + 5000);
    expect(await req("a")).toEqual({ kind: "throttled", retryAt });
    vi.setSystemTime(T0 + PAIRING_MIN_INTERVAL_MS - 1);
    expect(await req("a")).toEqual({ kind: "throttled", retryAt });
    // Throttled asks take no slot and push nobody out.
    expect((await p.list()).map((r) => r.senderId)).toEqual(["x", "y", "z"]);
    vi.setSystemTime(T0 + PAIRING_MIN_INTERVAL_MS);
    expect(await req("a")).toMatchObject({ kind: "code", reused: false });
    expect((await p.list()).map((r) => r.senderId)).toEqual(["y", "z", "a"]);
  });
});
