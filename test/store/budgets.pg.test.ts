import { describe } from "vitest";
import { openTestDb } from "../support/db.js";
import { budgetStoreCases } from "./budgets.cases.js";

describe("budget counters and reservations on PostgreSQL (counters locked FOR UPDATE)", () => {
  budgetStoreCases("postgresql", () => openTestDb("postgresql"));
});
