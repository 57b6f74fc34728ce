import { describe } from "vitest";
import { openTestDb } from "../support/db.js";
import { rateBudgetCases } from "./rate-budgets.cases.js";

describe("the shared send budget on SQLite", () => {
  rateBudgetCases("sqlite", () => openTestDb("sqlite"));
});
