import { describe } from "vitest";
import { openTestDb, roundTrip } from "./prepared.cases.js";

describe("prepared queries on PostgreSQL", () => {
  roundTrip("postgresql", () => openTestDb("postgresql"));
});
