import { describe } from "vitest";
import { openTestDb } from "../support/db.js";
import { approvalMoveCases } from "./approval-moves.cases.js";

describe("a group's approvals and grants follow it to a new chat id, on PostgreSQL", () => {
  approvalMoveCases("postgresql", () => openTestDb("postgresql"));
});
