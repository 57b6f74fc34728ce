import { describe, expect, it } from "vitest";
import { prepare, type Param } from "../../src/store/prepared.js";
import { queryBuilder } from "../../src/store/sql.js";
import { openTestDb, roundTrip } from "./prepared.cases.js";

const sqlite = { provider: "sqlite" as const, q: queryBuilder("sqlite") };
const postgresql = { provider: "postgresql" as const, q: queryBuilder("postgresql") };

describe("prepared queries", () => {
  roundTrip("sqlite", () => openTestDb("sqlite"));

  it("compiles per provider and puts each named value at its positions, a name used twice at both", () => {
    const q = prepare((b, p: Param<{ id: string; status: string }>) =>
      b
        .updateTable("OutboundDelivery")
        .set({ status: p("status") })
        .where("id", "=", p("id"))
        .where("status", "<>", p("status")),
    );
    const s = q.bind(sqlite, { id: "i", status: "sent" }).compile();
    const g = q.bind(postgresql, { id: "i", status: "sent" }).compile();
    expect(s.sql).toBe('update "OutboundDelivery" set "status" = ? where "id" = ? and "status" <> ?');
    expect(g.sql).toBe('update "OutboundDelivery" set "status" = $1 where "id" = $2 and "status" <> $3');
    expect(s.parameters).toEqual(["sent", "i", "sent"]);
    expect(q.bind(postgresql, { id: "j", status: "failed" }).compile().parameters).toEqual(["failed", "j", "failed"]);
  });

  it("fails when it is built if a marker is not a parameter of the compiled statement", () => {
    const q = prepare((b, p: Param<{ id: string; unused: string }>) => {
      void p("unused");
      return b.selectFrom("Session").select("id").where("id", "=", p("id"));
    });
    expect(() => q.bind(sqlite, { id: "a", unused: "b" })).toThrow(/marker "unused" is not a parameter/);
  });

  it("fails when it is built if a parameter is not a marker (a value captured from the first call)", () => {
    const captured = "first-call-id";
    const q = prepare((b) => b.selectFrom("Session").select("id").where("id", "=", captured));
    expect(() => q.bind(sqlite, {})).toThrow(/parameter 1 is not a marker/);
  });

  it("fails when a call leaves a named value out, or asks for a row the shape does not have", () => {
    const q = prepare((b, p: Param<{ id: string }>) => b.selectFrom("Session").select("id").where("id", "=", p("id")));
    expect(() => q.bind(sqlite, {} as { id: string })).toThrow(/no value for "id"/);
    const r = prepare((b, p: Param<Record<string, never>, { id: string }>) => b.selectFrom("Session").select("id").where("id", "=", p.row(1, "id")));
    expect(() => r.bind(sqlite, {}, [{ id: "a" }])).toThrow(/row 1 of 1 rows/);
  });
});
