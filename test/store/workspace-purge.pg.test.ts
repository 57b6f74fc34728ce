import { describe } from "vitest";
import { openTestDb } from "../support/db.js";
import { workspacePurgeCases } from "./workspace-purge.cases.js";

describe("Slack workspace purge on PostgreSQL", () => {
  workspacePurgeCases("postgresql", () => openTestDb("postgresql"));
});
