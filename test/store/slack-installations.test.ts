import { describe } from "vitest";
import { openTestDb } from "../support/db.js";
import { slackInstallationCases } from "./slack-installations.cases.js";

describe("Slack installations and OAuth states on SQLite", () => {
  slackInstallationCases("sqlite", () => openTestDb("sqlite"));
});
