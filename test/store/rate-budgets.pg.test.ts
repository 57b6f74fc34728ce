import { describe, expect, it } from "vitest";
import { openDatabase } from "../../src/store/index.js";
import { RateBudgetStore } from "../../src/store/rate-budgets.js";
import { openTestDb } from "../support/db.js";
import { rateBudgetCases } from "./rate-budgets.cases.js";

describe("the shared send budget on PostgreSQL", () => {
  rateBudgetCases("postgresql", () => openTestDb("postgresql"));

  it("three processes' pools leasing at once never take more than the bucket holds", async () => {
    const t = await openTestDb("postgresql");
    // One Database per process, each with its own pool of connections, as three gateways have.
    const others = await Promise.all([openDatabase({ url: t.url }), openDatabase({ url: t.url })]);
    try {
      const stores = [t.db, ...others].map((db) => new RateBudgetStore(db));
      const limit = { ratePerSec: 0.001, burst: 30 };
      const got = await Promise.all(Array.from({ length: 60 }, (_, i) => stores[i % 3]!.lease("telegram:7", 1 + (i % 3), limit)));
      expect(got.reduce((n, g) => n + g.granted, 0)).toBe(30);
    } finally {
      await Promise.all(others.map((db) => db.close()));
      await t.close();
    }
  });
});
