import { afterEach, expect, it } from "vitest";
import { BudgetStore, UsageStore, type BudgetClaim } from "../../src/store/index.js";
import type { TestDb, TestProvider } from "../support/db.js";

const claim = (over: Partial<BudgetClaim> = {}): BudgetClaim => ({
  budget: "user/day/tokens",
  scope: "u1",
  period: "2026-12-07",
  limit: 100,
  amount: 10,
  ...over,
});
const soon = () => new Date(Date.now() + 60_000);
const usage = (id: string, tokens: number) => ({ id, agent: "default", model: "m", kind: "turn", promptTokens: tokens, completionTokens: 0 });

/** The budget store's promises, run on each provider (budgets.test.ts, budgets.pg.test.ts). */
export function budgetStoreCases(provider: TestProvider, open: () => Promise<TestDb>): void {
  let t: TestDb | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });
  const counter = async (store: BudgetStore, c = claim()) => (await store.counters([{ budget: c.budget, period: c.period }])).find((r) => r.scope === c.scope);

  it(`${provider}: a reservation holds the call's maximum; its settlement releases it and charges what was used, with the usage row, once`, async () => {
    t = await open();
    const store = new BudgetStore(t.db);
    expect(await store.reserve("call-1", [claim()], soon())).toEqual({});
    expect(await counter(store)).toMatchObject({ spent: 0, reserved: 10 });
    await store.settle("call-1", () => 7, usage("call-1", 7));
    expect(await counter(store)).toMatchObject({ spent: 7, reserved: 0 });
    // A retried settlement (its first attempt's answer lost) changes nothing and writes no second row.
    await store.settle("call-1", () => 7, usage("call-1", 7));
    expect(await counter(store)).toMatchObject({ spent: 7, reserved: 0 });
    expect(await new UsageStore(t.db).recent(10)).toHaveLength(1);
    expect(await store.openReservations()).toEqual([]);
  });

  it(`${provider}: a settled usage row reads back column by column as written, and a column left out takes the schema's default`, async () => {
    t = await open();
    const store = new BudgetStore(t.db);
    const at = new Date("2026-12-07T10:00:00.000Z");
    const full = {
      id: "full",
      at,
      sessionId: "s1",
      agent: "support",
      model: "gpt-x",
      kind: "tool_round",
      userId: "u9",
      platform: "slack",
      chatId: "C1",
      workspaceId: "T1",
      promptTokens: 11,
      completionTokens: 22,
      cachedTokens: 3,
      estimated: true,
      costMicros: 4567,
      latencyMs: 89,
      priced: false,
    };
    await store.settle("full", () => 0, full);
    // Left out, and given as undefined: both take the default.
    await store.settle("sparse", () => 0, { id: "sparse", agent: "default", model: "m", kind: "turn", userId: undefined });
    const rows = await new UsageStore(t.db).recent(10);
    const byId = new Map(rows.map((r) => [r.id, { ...r, at: new Date(r.at), costMicros: Number(r.costMicros) }]));
    expect(byId.get("full")).toEqual(full);
    expect(byId.get("sparse")).toMatchObject({
      sessionId: "",
      userId: "",
      platform: "",
      chatId: "",
      workspaceId: "",
      promptTokens: 0,
      completionTokens: 0,
      cachedTokens: 0,
      estimated: false,
      costMicros: 0,
      latencyMs: 0,
      priced: true,
    });
    expect(Math.abs(byId.get("sparse")!.at.getTime() - Date.now())).toBeLessThan(60 * 60_000);
  });

  it(`${provider}: refused once spent plus reserved reaches the limit, and nothing is reserved by a refusal`, async () => {
    t = await open();
    const store = new BudgetStore(t.db);
    for (let i = 0; i < 9; i++) expect((await store.reserve(`c${i}`, [claim()], soon())).refused).toBeUndefined();
    // 90 reserved of 100: one more call is still admitted (it may end past the limit by its own size)...
    expect((await store.reserve("c9", [claim()], soon())).refused).toBeUndefined();
    // ... and at 100 the next is refused, on any budget of the call: the other claim reserves nothing either.
    const other = claim({ budget: "global/day/tokens", scope: "*", limit: 1000 });
    const r = await store.reserve("c10", [other, claim()], soon());
    expect(r.refused).toMatchObject({ budget: "user/day/tokens", spent: 0, reserved: 100 });
    expect((await counter(store, other))?.reserved ?? 0).toBe(0);
    expect((await store.openReservations()).filter((x) => x.id === "c10")).toEqual([]);
  });

  it(`${provider}: 40 calls reserving at once on one counter: exactly as many admitted as the limit allows`, async () => {
    t = await open();
    const store = new BudgetStore(t.db);
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => store.reserve(`p${i}`, [claim()], soon())));
    expect(results.filter((r) => !r.refused)).toHaveLength(10);
    expect(await counter(store)).toMatchObject({ spent: 0, reserved: 100 });
  });

  it(`${provider}: the sweep settles an expired reservation at its reserved amount once; a late settlement then charges nothing`, async () => {
    t = await open();
    const store = new BudgetStore(t.db);
    await store.reserve("dead", [claim()], new Date(Date.now() - 1));
    await store.reserve("alive", [claim()], soon());
    const swept = await store.sweepExpired(new Date());
    expect(swept.map((s) => [s.id, s.spent])).toEqual([["dead", 10]]);
    expect(await store.sweepExpired(new Date())).toEqual([]);
    await store.settle("dead", () => 3);
    expect(await counter(store)).toMatchObject({ spent: 10, reserved: 10 });
  });

  it(`${provider}: a reset sets spent back to 0 for the period (one scope or all) and keeps what is reserved`, async () => {
    t = await open();
    const store = new BudgetStore(t.db);
    await store.reserve("a", [claim()], soon());
    await store.settle("a", () => 10);
    await store.reserve("b", [claim({ scope: "u2" })], soon());
    await store.reserve("c", [claim()], soon());
    expect(await store.reset("user/day/tokens", "2026-12-07", "u1")).toBe(1);
    expect(await counter(store)).toMatchObject({ spent: 0, reserved: 10 });
    expect(await store.reset("user/day/tokens", "2026-12-07")).toBe(2);
    // The settlement of a call reserved before the reset never drives reserved below 0.
    await store.reset("user/day/tokens", "2026-12-07");
    await store.settle("c", () => 4);
    expect(await counter(store)).toMatchObject({ spent: 4, reserved: 0 });
  });
}
