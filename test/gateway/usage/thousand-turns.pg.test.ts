import { describe } from "vitest";
import { thousandTurnCases } from "./thousand-turns.cases.js";

describe("usage rows over 1,000 turns on PostgreSQL", () => {
  thousandTurnCases("postgresql");
});
