/**
 * What the meter reserves and charges when a price is missing or per minute: a model with no price is refused
 * wherever a cost budget applies (else `/model <unpriced>` escapes every cost budget), and a transcription reserves
 * and is charged its audio at the perMinute price. The store is a recording fake: these are the meter's decisions.
 */
import { describe, expect, it } from "vitest";
import type { ModelCall, ModelUsage } from "../../../src/agent/model-meter.js";
import { isAgentError } from "../../../src/agent/types.js";
import type { AgentsConfig, Budget } from "../../../src/config/agents.js";
import type { Logger } from "../../../src/log.js";
import type { MeterPlace } from "../../../src/gateway/usage/budgets.js";
import { unpricedLine } from "../../../src/gateway/usage/budgets.js";
import { maxCostMicros } from "../../../src/gateway/usage/pricing.js";
import { UsageMeter } from "../../../src/gateway/usage/usage-meter.js";
import type { BudgetClaim, BudgetStore } from "../../../src/store/budgets.js";

const place: MeterPlace = { agent: "default", sessionId: "s1", userId: "u1", platform: "telegram", chatId: "61" };

function meterWith(agents: Pick<AgentsConfig, "prices" | "budgets">) {
  const reserved: BudgetClaim[][] = [];
  const settled: Array<{ spent: Record<string, number>; row?: { costMicros: number; priced: boolean; estimated: boolean } }> = [];
  const warnings: Array<{ obj: Record<string, unknown>; msg: string }> = [];
  let claims: BudgetClaim[] = [];
  const store = {
    reserve: async (_id: string, c: BudgetClaim[]) => {
      claims = c;
      reserved.push(c);
      return {};
    },
    settle: async (_id: string, spent: (budget: string) => number, row?: { costMicros: number; priced: boolean; estimated: boolean }) => {
      settled.push({ spent: Object.fromEntries(claims.map((c) => [c.budget, spent(c.budget)])), row });
      return [];
    },
  } as unknown as BudgetStore;
  const log = {
    warn: (obj: Record<string, unknown>, msg: string) => warnings.push({ obj, msg }),
    error: () => {},
    info: () => {},
    debug: () => {},
  } as unknown as Logger;
  const meter = new UsageMeter({ store, agents, timezone: "UTC", reservationTtlMs: 60_000, log, now: () => new Date("2026-12-07T10:00:00Z") });
  return { meter: meter.for(place), reserved, settled, warnings };
}

const usage = (model: string, over: Partial<ModelUsage> = {}): ModelUsage => ({
  model,
  promptTokens: 1000,
  completionTokens: 100,
  cachedTokens: 0,
  estimated: false,
  latencyMs: 5,
  ...over,
});
const turn = (model: string): ModelCall => ({ kind: "turn", model, maxTokens: 2000 });
const monthly: Budget = { per: "global", period: "month", cost: 5, contact: "#ai-budget" };

describe("a model with no price", () => {
  it("is refused before anything is reserved or sent where a cost budget applies, with a line that names the fix", async () => {
    const m = meterWith({ prices: { "small-1": { input: 1, output: 2 } }, budgets: [{ per: "user", period: "day", tokens: 10_000 }, monthly] });
    const err = await m.meter.reserve(turn("big-1")).catch((e: unknown) => e);
    expect(isAgentError(err) && err.code).toBe("Budget");
    expect((err as Error).message).toBe(
      'The model "big-1" has no price, so the gateway\'s monthly cost budget (5.00) cannot count it, and nothing was sent to it. ' +
        'Switch to a priced model with /model, or ask #ai-budget to add "big-1" to prices in AGENTS_CONFIG.',
    );
    expect(m.reserved).toEqual([]);
    expect(m.warnings).toHaveLength(1);
    expect(m.warnings[0]!.obj).toMatchObject({ budget: "global/month/cost", model: "big-1", agent: "default" });
    expect(m.warnings[0]!.msg).toContain('add "big-1" to prices in AGENTS_CONFIG');
    // A priced model is reserved and charged as before.
    const ticket = await m.meter.reserve(turn("small-1"));
    await ticket.settle(usage("small-1"));
    expect(m.settled[0]!.row).toMatchObject({ costMicros: 1000 * 1 + 100 * 2, priced: true });
  });

  it("is what a model named after an object's own members has too (constructor, toString, __proto__): no price, refused under a cost budget", async () => {
    for (const model of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
      const m = meterWith({ prices: { "small-1": { input: 1, output: 2 } }, budgets: [monthly] });
      const err = await m.meter.reserve(turn(model)).catch((e: unknown) => e);
      expect(isAgentError(err) && err.code, model).toBe("Budget");
      expect(m.reserved, model).toEqual([]);
    }
  });

  it("goes through where only token budgets (or none) apply, or the cost budget is another agent's: it costs 0 and its row says no price", async () => {
    for (const budgets of [[], [{ per: "user", period: "day", tokens: 10_000 }], [{ ...monthly, agent: "support" }]] as Budget[][]) {
      const m = meterWith({ prices: {}, budgets });
      const ticket = await m.meter.reserve(turn("big-1"));
      await ticket.settle(usage("big-1"));
      expect(m.settled).toHaveLength(1);
      expect(m.settled[0]!.row).toMatchObject({ costMicros: 0, priced: false });
      expect(m.warnings).toEqual([]);
    }
  });

  it("a free model listed at 0 is priced: it goes through a cost budget and is charged 0", async () => {
    const m = meterWith({ prices: { "local-llama": { input: 0, output: 0 } }, budgets: [monthly] });
    const ticket = await m.meter.reserve(turn("local-llama"));
    await ticket.settle(usage("local-llama"));
    expect(m.settled[0]).toMatchObject({ spent: { "global/month/cost": 0 }, row: { costMicros: 0, priced: true } });
  });
});

describe("a transcription priced per minute", () => {
  const prices = { "whisper-1": { input: 0, output: 0, perMinute: 0.006 } };

  it("reserves its audio's duration at the perMinute price on a cost budget, and is charged the seconds it settles with", async () => {
    const m = meterWith({
      prices,
      budgets: [
        { per: "user", period: "day", cost: 1 },
        { per: "user", period: "day", tokens: 1000 },
      ],
    });
    const ticket = await m.meter.reserve({ kind: "transcription", model: "whisper-1", maxTokens: 0, audioSeconds: 120 });
    expect(m.reserved[0]!.map((c) => [c.budget, c.amount])).toEqual([
      ["user/day/cost", 12_000],
      ["user/day/tokens", 0],
    ]);
    await ticket.settle(usage("whisper-1", { promptTokens: 0, completionTokens: 3, estimated: true, audioSeconds: 121.5 }));
    expect(m.settled[0]).toMatchObject({
      spent: { "user/day/cost": 12_150, "user/day/tokens": 3 },
      row: { costMicros: 12_150, priced: true, estimated: true },
    });
  });

  it("maxCostMicros bounds either settlement: the tokens at the dearer price plus the audio, rounded up", () => {
    expect(maxCostMicros(prices["whisper-1"], 0, 7)).toBe(700);
    expect(maxCostMicros({ input: 1, output: 3, perMinute: 0.006 }, 10, 0.5)).toBe(30 + 50);
    expect(maxCostMicros({ input: 1, output: 3 }, 10, 60)).toBe(30);
    expect(maxCostMicros(undefined, 10, 60)).toBe(0);
  });
});

describe("the unpriced line", () => {
  it("says whose budget, keeps an agent's name as written, and asks an admin when the budget names no contact", () => {
    const line = unpricedLine({ per: "agent", period: "day", cost: 0.5, agent: "Coder" }, place, "o9");
    expect(line).toBe(
      'The model "o9" has no price, so the agent Coder\'s daily cost budget (0.50) cannot count it, and nothing was sent to it. ' +
        'Switch to a priced model with /model, or ask an admin to add "o9" to prices in AGENTS_CONFIG.',
    );
  });
});
