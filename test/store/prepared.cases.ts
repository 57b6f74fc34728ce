import { expect, it } from "vitest";
import { prepare, type Param } from "../../src/store/prepared.js";
import { openTestDb, type TestDb, type TestProvider } from "../support/db.js";

const PUT = prepare((b, p: Param<{ updatedAt: Date }, { key: string; value: string }>, { rows }) =>
  b.insertInto("AdapterState").values(Array.from({ length: rows }, (_, i) => ({ key: p.row(i, "key"), value: p.row(i, "value"), updatedAt: p("updatedAt") }))),
);

const GET = prepare((b, p: Param<{ key: string; after: Date }>) =>
  b.selectFrom("AdapterState").select(["key", "value", "updatedAt"]).where("key", "=", p("key")).where("updatedAt", ">", p("after")),
);

const COUNT_IN = prepare((b, p: Param<Record<string, never>, { key: string }>, { rows }) =>
  b
    .selectFrom("AdapterState")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where(
      "key",
      "in",
      Array.from({ length: rows }, (_, i) => p.row(i, "key")),
    ),
);

/** The same statements, compiled once, bound to different values on each call, on a real database of `provider`. */
export function roundTrip(provider: TestProvider, open: () => Promise<TestDb>): void {
  it(`binds new values to the statement compiled once (${provider})`, async () => {
    const t = await open();
    try {
      const at = new Date("2026-03-04T05:06:07.890Z");
      expect(await t.db.exec("put", PUT.bind(t.db, { updatedAt: at }, [{ key: "a", value: "1" }]))).toBe(1);
      expect(
        await t.db.exec(
          "put",
          PUT.bind(t.db, { updatedAt: at }, [
            { key: "b", value: "2" },
            { key: "c", value: "3" },
            { key: "d", value: "4" },
          ]),
        ),
      ).toBe(3);
      const before = new Date(at.getTime() - 1);
      // Each call reads its own values: nothing of the first call is frozen into the second.
      expect(await t.db.query("get", GET.bind(t.db, { key: "a", after: before }))).toEqual([{ key: "a", value: "1", updatedAt: at }]);
      expect(await t.db.query("get", GET.bind(t.db, { key: "c", after: before }))).toEqual([{ key: "c", value: "3", updatedAt: at }]);
      expect(await t.db.query("get", GET.bind(t.db, { key: "c", after: at }))).toEqual([]);
      // One compile per shape: the same text object comes back on every call.
      expect(GET.bind(t.db, { key: "x", after: at }).compile().sql).toBe(GET.bind(t.db, { key: "y", after: at }).compile().sql);
      const [two] = await t.db.query("count", COUNT_IN.bind(t.db, {}, [{ key: "a" }, { key: "d" }]));
      const [one] = await t.db.query("count", COUNT_IN.bind(t.db, {}, [{ key: "b" }]));
      expect([Number(two!.n), Number(one!.n)]).toEqual([2, 1]);
      // Inside a transaction too.
      const rows = await t.db.sqlTransaction(
        "tx",
        async (s) => (await s.run(PUT.bind(t.db, { updatedAt: at }, [{ key: "e", value: "5" }])), s.all(GET.bind(t.db, { key: "e", after: before }))),
      );
      expect(rows).toEqual([{ key: "e", value: "5", updatedAt: at }]);
    } finally {
      await t.close();
    }
  });
}

export { openTestDb };
