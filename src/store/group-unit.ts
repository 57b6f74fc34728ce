import type { Sql } from "./sql.js";

/** One caller's work in a group commit (sqlite/group-commit.ts, postgres/group-commit.ts): the same shape on both back ends. */
export interface GroupUnit {
  op: string;
  /**
   * One statement. On SQLite it needs no savepoint (SQLite undoes a failed statement by itself); on PostgreSQL,
   * alone it runs without BEGIN and COMMIT, and its only fault seam is onStatement, as before grouping.
   */
  single: boolean;
  fn: (q: Sql) => Promise<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  result?: unknown;
  error?: unknown;
  /** Failed in an earlier try of this group: the group was rolled back and runs again without it. */
  excluded?: boolean;
}
