import { describe } from "vitest";
import { openTestDb } from "../support/db.js";
import { budgetStoreCases } from "./budgets.cases.js";

describe("budget counters and reservations on SQLite", () => {
  budgetStoreCases("sqlite", () => openTestDb("sqlite"));
});
