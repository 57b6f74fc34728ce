import { describe } from "vitest";
import { openTestDb } from "../support/db.js";
import { workspacePurgeCases } from "./workspace-purge.cases.js";

describe("Slack workspace purge on SQLite", () => {
  workspacePurgeCases("sqlite", () => openTestDb("sqlite"));
});
