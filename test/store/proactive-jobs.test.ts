import { describe } from "vitest";
import { openTestDb } from "../support/db.js";
import { proactiveAndJobCases } from "./proactive-jobs.cases.js";

describe("conversation addresses, API messages and jobs on SQLite", () => {
  proactiveAndJobCases("sqlite", () => openTestDb("sqlite"));
});
