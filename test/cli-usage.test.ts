/**
 * `switchboard usage` and `switchboard budgets` in process (runCli), on a SQLite file holding usage rows
 * and budget counters written by the real stores: totals by group, the budgets' counters, a reset, and
 * the refusals of a bad --by, --since or budget name.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../src/cli.js";
import { periodOf } from "../src/gateway/usage/periods.js";
import { BudgetStore, openDatabase } from "../src/store/index.js";
import { freshMigratedSqliteUrl } from "./support/db.js";

let dir: string | undefined;
afterEach(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, { out: (l) => out.push(l), err: (l) => err.push(l) }, { LOG_LEVEL: "silent", ...env });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

async function seeded() {
  const url = await freshMigratedSqliteUrl();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-cli-usage-"));
  const agents = path.join(dir, "agents.json");
  fs.writeFileSync(agents, JSON.stringify({ prices: { big: { input: 2, output: 8 } }, budgets: [{ per: "user", period: "day", tokens: 1000 }] }));
  const db = await openDatabase({ url });
  try {
    const store = new BudgetStore(db);
    const period = periodOf("day", "UTC", new Date()).key;
    const claim = (user: string) => [{ budget: "user/day/tokens", scope: user, period, limit: 1000, amount: 500 }];
    const row = (id: string, user: string, model: string, tokens: number, cost: number) => ({
      id,
      agent: "default",
      model,
      kind: "turn",
      userId: user,
      promptTokens: tokens,
      completionTokens: 10,
      costMicros: cost,
      priced: cost > 0,
    });
    await store.reserve("a", claim("u1"), new Date(Date.now() + 60_000));
    await store.settle("a", () => 110, row("a", "u1", "big", 100, 280));
    await store.reserve("b", claim("u2"), new Date(Date.now() + 60_000));
    await store.settle("b", () => 210, row("b", "u2", "small", 200, 0));
    await store.reserve("c", claim("u2"), new Date(Date.now() + 60_000));
  } finally {
    await db.close();
  }
  return { DATABASE_URL: url, AGENTS_CONFIG: agents };
}

describe("switchboard usage and budgets", () => {
  it("usage --by model --json totals the rows per model; the human table says no price for an unpriced model", async () => {
    const env = await seeded();
    const r = await cli(["usage", "--by", "model", "--json"], env);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.out);
    expect(doc.total).toMatchObject({ calls: 2, promptTokens: 300, completionTokens: 20, costMicros: 280, unpriced: 1 });
    expect(doc.rows.map((x: { key: string; calls: number }) => [x.key, x.calls])).toEqual([
      ["big", 1],
      ["small", 1],
    ]);
    const human = await cli(["usage", "--by", "model", "--since", "today"], env);
    expect(human.out).toMatch(/small\s+1\s+200\s+10\s+0\s+no price/);
  });

  it("budgets lists each counter with spent, reserved and limit; reset sets one scope's spent to 0 and keeps its reservation", async () => {
    const env = await seeded();
    const list = JSON.parse((await cli(["budgets", "--json"], env)).out);
    expect(list.budgets.map((b: { scope: string; spent: number; reserved: number; limit: number }) => [b.scope, b.spent, b.reserved, b.limit])).toEqual([
      ["u2", 210, 500, 1000],
      ["u1", 110, 0, 1000],
    ]);
    const reset = await cli(["budgets", "reset", "user/day/tokens", "u2", "--json"], env);
    expect(JSON.parse(reset.out)).toEqual({ budget: "user/day/tokens", scope: "u2", reset: 1 });
    const after = JSON.parse((await cli(["budgets", "--json"], env)).out);
    expect(after.budgets.find((b: { scope: string }) => b.scope === "u2")).toMatchObject({ spent: 0, reserved: 500 });
  });

  it("a bad --by, a bad --since and an unknown budget are refused with what is allowed", async () => {
    const env = await seeded();
    const by = await cli(["usage", "--by", "planet", "--json"], env);
    expect(by.code).toBe(2);
    expect(JSON.parse(by.out).error.message).toContain("--by wants one of user, chat, agent, workspace, model");
    expect((await cli(["usage", "--since", "last tuesday", "--json"], env)).code).toBe(2);
    const unknown = await cli(["budgets", "reset", "user/week/tokens", "--json"], env);
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.out).error).toEqual({ code: "NotFound", message: 'No budget is named "user/week/tokens". The budgets are: user/day/tokens.' });
    expect((await cli(["budgets", "reset", "user/day/tokens", "u1", "extra", "--json"], env)).code).toBe(2);
  });
});
