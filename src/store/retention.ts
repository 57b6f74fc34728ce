import { sql } from "kysely";
import type { Database } from "./db.js";

/** The record tables a retention sweep deletes from, and the column each one's age is read from. */
const AGE = { InboundEvent: "receivedAt", OutboundDelivery: "createdAt" } as const;

/**
 * Deletes up to `limit` rows of `table` in one of the `settled` statuses whose age column
 * is before `before`: one short statement (the caller loops), so a sweep never holds the
 * database for long; rows in any other status are kept whatever their age.
 */
export function pruneSettled(db: Database, op: string, table: keyof typeof AGE, settled: readonly string[], before: Date, limit: number): Promise<number> {
  const q = db.q;
  return db.exec(
    op,
    q.deleteFrom(table).where(
      "id",
      "in",
      q
        .selectFrom(table)
        .select("id")
        .where("status", "in", [...settled])
        .where(sql.ref(AGE[table]), "<", before)
        .limit(limit),
    ),
  );
}
