import { describe } from "vitest";
import { draftRestartCases } from "./draft-restart.cases.js";

describe("a stop while the agent streams, then a restart, on PostgreSQL (no sent log)", () => {
  draftRestartCases("postgresql");
});
