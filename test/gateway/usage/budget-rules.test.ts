import { describe, expect, it } from "vitest";
import type { Budget } from "../../../src/config/agents.js";
import { GatewayMetrics, MODEL_LABELS } from "../../../src/gateway/metrics.js";
import { budgetKey, chargesFor, refusalLine, scopeOf, type MeterPlace } from "../../../src/gateway/usage/budgets.js";
import { periodOf } from "../../../src/gateway/usage/periods.js";
import { costMicros, formatCost, maxCostMicros } from "../../../src/gateway/usage/pricing.js";

const place: MeterPlace = { agent: "coder", sessionId: "s1", userId: "u1", platform: "slack", chatId: "T1/C1", workspace: "T1" };

describe("budget periods in DEFAULT_TIMEZONE", () => {
  it("a day runs from local midnight to local midnight: 23:30 UTC is already tomorrow in Paris", () => {
    const w = periodOf("day", "Europe/Paris", new Date("2026-12-06T23:30:00Z"));
    expect(w.key).toBe("2026-12-07");
    expect(w.start.toISOString()).toBe("2026-12-06T23:00:00.000Z");
    expect(w.resetsAt.toISOString()).toBe("2026-12-07T23:00:00.000Z");
    // ... and one minute before local midnight is still the 6th.
    expect(periodOf("day", "Europe/Paris", new Date("2026-12-06T22:59:00Z")).key).toBe("2026-12-06");
  });

  it("behind UTC: New York's day and month begin at 05:00 UTC in winter", () => {
    const w = periodOf("month", "America/New_York", new Date("2027-01-01T03:00:00Z"));
    expect(w.key).toBe("2026-12");
    expect(w.start.toISOString()).toBe("2026-12-01T05:00:00.000Z");
    expect(w.resetsAt.toISOString()).toBe("2027-01-01T05:00:00.000Z");
  });

  it("a day across the spring DST change is 23 hours long, and the month rolls over at the year's end", () => {
    const w = periodOf("day", "Europe/Paris", new Date("2026-03-29T12:00:00Z"));
    expect(w.key).toBe("2026-03-29");
    expect(w.resetsAt.getTime() - w.start.getTime()).toBe(23 * 3600_000);
    expect(periodOf("month", "Asia/Tokyo", new Date("2026-12-31T15:00:00Z")).key).toBe("2027-01");
  });
});

describe("which budgets apply, and what a call reserves", () => {
  const user: Budget = { per: "user", period: "day", tokens: 1000 };
  it("each budget is scoped to its place; filters by agent and platform; no workspace, no workspace budget", () => {
    expect(scopeOf(user, place)).toBe("u1");
    expect(scopeOf({ per: "chat", period: "day", tokens: 1 }, place)).toBe("slack:T1/C1");
    expect(scopeOf({ per: "workspace", period: "day", tokens: 1 }, place)).toBe("slack:T1");
    expect(scopeOf({ per: "workspace", period: "day", tokens: 1 }, { ...place, workspace: undefined })).toBeUndefined();
    expect(scopeOf({ per: "global", period: "month", tokens: 1 }, place)).toBe("*");
    expect(scopeOf({ per: "agent", period: "day", tokens: 1, agent: "support" }, place)).toBeUndefined();
    expect(scopeOf({ per: "user", period: "day", tokens: 1, platform: "telegram" }, place)).toBeUndefined();
    expect(scopeOf(user, { ...place, userId: "" })).toBeUndefined();
  });

  it("a token budget reserves the call's maximum tokens; a cost budget their maximum cost in micro-units", () => {
    const cost: Budget = { per: "agent", period: "month", cost: 50, agent: "coder" };
    const charges = chargesFor([user, cost], place, 1500, { input: 0.15, output: 0.6 }, "UTC", new Date("2026-12-07T10:00:00Z"));
    expect(charges.map((c) => c.claim)).toEqual([
      { budget: "user/day/tokens", scope: "u1", period: "2026-12-07", limit: 1000, amount: 1500 },
      { budget: "agent/month/cost/agent=coder", scope: "coder", period: "2026-12", limit: 50_000_000, amount: 900 },
    ]);
    expect(budgetKey({ per: "user", period: "day", tokens: 5, platform: "slack" })).toBe("user/day/tokens/platform=slack");
  });
});

describe("prices", () => {
  it("a price per million tokens is micro-units per token; cached prompt tokens at the cached price; no price, no cost", () => {
    const price = { input: 2.5, cachedInput: 1.25, output: 10 };
    expect(costMicros(price, { promptTokens: 1000, completionTokens: 100, cachedTokens: 400 })).toBe(600 * 2.5 + 400 * 1.25 + 100 * 10);
    expect(costMicros(undefined, { promptTokens: 1000, completionTokens: 100, cachedTokens: 0 })).toBe(0);
    expect(costMicros({ input: 0, output: 0, perMinute: 0.006 }, { promptTokens: 0, completionTokens: 0, cachedTokens: 0, audioSeconds: 90 })).toBe(9000);
    expect(maxCostMicros(price, 100)).toBe(1000);
    expect(formatCost(1_500_000)).toBe("1.50");
    expect(formatCost(1234)).toBe("0.001234");
  });
});

describe("the refusal line", () => {
  it("names the budget, when it resets in DEFAULT_TIMEZONE, and whom to ask (the budget's contact, or an admin), on one line", () => {
    const w = periodOf("day", "Europe/Paris", new Date("2026-12-07T10:00:00Z"));
    const line = refusalLine({ per: "user", period: "day", tokens: 200_000 }, place, w, "Europe/Paris");
    expect(line).toBe("Your daily token budget (200,000 tokens) is used up; it resets at 2026-12-08 00:00 (Europe/Paris). Ask an admin to raise it.");
    const agent = refusalLine(
      { per: "agent", period: "month", cost: 50, agent: "coder", contact: "#ai-budget" },
      place,
      periodOf("month", "UTC", new Date("2026-12-07T10:00:00Z")),
      "UTC",
    );
    expect(agent).toBe("The agent coder's monthly cost budget (50.00) is used up; it resets at 2027-01-01 00:00 (UTC). Ask #ai-budget to raise it.");
    expect(line).not.toContain("\n");
  });
});

describe("metric labels", () => {
  it(`models past the first ${MODEL_LABELS} are counted as "other", so /model choices cannot grow the label set without end`, async () => {
    const m = new GatewayMetrics();
    for (let i = 0; i < MODEL_LABELS + 5; i++) m.modelTokens.inc({ agent: "default", model: m.modelLabel(`model-${i}`), type: "prompt" }, 1);
    const text = await m.text();
    expect(text).toContain('model="model-0"');
    expect(text).toContain(`model="model-${MODEL_LABELS - 1}"`);
    expect(text).not.toContain(`model="model-${MODEL_LABELS}"`);
    expect(text).toMatch(/switchboard_model_tokens_total\{agent="default",model="other",type="prompt"\} 5/);
    // A model seen early keeps its own label.
    expect(m.modelLabel("model-3")).toBe("model-3");
  });
});
