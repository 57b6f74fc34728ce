import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { BodyBudget } from "../../src/gateway/http/body.js";
import { RefusalLog } from "../../src/gateway/http/refusals.js";
import { GatewayMetrics } from "../../src/gateway/metrics.js";
import { createLogger } from "../../src/log.js";

describe("refusals at the edge", () => {
  it("are all counted, and logged at warn at most once per 10 s per reason, with the count of the ones in between", async () => {
    const lines: string[] = [];
    const log = createLogger({ level: "info", destination: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString("utf8")), cb()) }) });
    const metrics = new GatewayMetrics();
    const refusals = new RefusalLog(log, metrics);
    for (let i = 0; i < 1000; i++) refusals.refuse("malformed", { code: "HPE_INVALID_METHOD" });
    refusals.refuse("host");
    const text = await metrics.text();
    expect(text).toMatch(/^switchboard_http_refused_total\{reason="malformed"\} 1000$/m);
    expect(text).toMatch(/^switchboard_http_refused_total\{reason="host"\} 1$/m);
    const warned = lines.map((l) => JSON.parse(l) as { level: string; reason: string; msg: string });
    expect(warned.map((w) => [w.level, w.reason, w.msg])).toEqual([
      ["warn", "malformed", "HTTP request refused"],
      ["warn", "host", "HTTP request refused"],
    ]);
  });
});

describe("the body budget", () => {
  it("when full, refuses the holder with the most bytes, not the newcomer", () => {
    const budget = new BodyBudget(100);
    const evicted: string[] = [];
    const big = budget.open(() => evicted.push("big"));
    const mid = budget.open(() => evicted.push("mid"));
    expect(budget.take(big, 70)).toBe(true);
    expect(budget.take(mid, 20)).toBe(true);
    const small = budget.open(() => evicted.push("small"));
    // 90 + 30 > 100: the largest (big, 70) goes; the small webhook gets its room.
    expect(budget.take(small, 30)).toBe(true);
    expect(evicted).toEqual(["big"]);
    expect(budget.usedBytes).toBe(50);
    // Growing past everyone else: it is refused itself, nobody else is evicted.
    expect(budget.take(mid, 60)).toBe(false);
    expect(evicted).toEqual(["big"]);
    budget.release(mid);
    budget.release(small);
    expect(budget.usedBytes).toBe(0);
  });
});
