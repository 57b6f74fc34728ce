import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type Compilable,
} from "kysely";
import type { DB } from "./generated/kysely/db.js";

/**
 * The one way `src/store` talks to the database (docs/DESIGN.md, "Data
 * access"): every statement is built with Kysely over the row types generated
 * from the Prisma schema (`src/store/generated/kysely/db.ts`, written by
 * `npm run db:generate`), compiled for the provider, and run on the back
 * end's driver with prepared statements cached per text (sqlite/sql.ts,
 * postgres/sql.ts). Kysely only builds and compiles; the back end's Database
 * (sqlite/database.ts, postgres/database.ts) decides where and when a
 * statement runs (the SQLite mutex, group commit, retries, fault hooks).
 *
 * The rows are the same on both providers: the generated types are the
 * PostgreSQL ones (Date, boolean, number), and SQLite's stored forms (ISO
 * text, 0/1) are converted on the way in and out by each column's declared
 * type, so either side reads what the other wrote, Prisma Migrate included.
 */
export type { DB };
export type QueryBuilder = Kysely<DB>;
export type SqlValue = string | number | boolean | null | undefined | Date;

/** A statement built with the query builder; its rows' type comes from the generated schema types. */
export type Query<R = unknown> = Compilable<R>;

export interface Sql {
  /** Rows of a statement (for statements with RETURNING too). */
  all<R>(q: Query<R>): Promise<R[]>;
  /** How many rows a statement changed. */
  run(q: Query<unknown>): Promise<number>;
}

/** The query builder for a provider: it compiles, it never connects (DummyDriver). */
export function queryBuilder(provider: "sqlite" | "postgresql"): QueryBuilder {
  return new Kysely<DB>({
    dialect:
      provider === "sqlite"
        ? {
            createAdapter: () => new SqliteAdapter(),
            createDriver: () => new DummyDriver(),
            createIntrospector: (db) => new SqliteIntrospector(db),
            createQueryCompiler: () => new SqliteQueryCompiler(),
          }
        : {
            createAdapter: () => new PostgresAdapter(),
            createDriver: () => new DummyDriver(),
            createIntrospector: (db) => new PostgresIntrospector(db),
            createQueryCompiler: () => new PostgresQueryCompiler(),
          },
  });
}

export type QueryListener = (e: { query: string; params: string; durationMs: number }) => void;

/** A stored DateTime read back on either provider (ISO text on SQLite, a Date on PostgreSQL); SQLite's CURRENT_TIMESTAMP is UTC. */
export function toDate(v: unknown): Date {
  if (v instanceof Date) return v;
  const s = String(v);
  return new Date(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(s) ? `${s.replace(" ", "T")}Z` : s);
}
export const toDateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : toDate(v));
export const toBool = (v: unknown): boolean => v === true || v === 1 || v === 1n;

/** Counts one statement under the op that ran it. */
export function countOp(byOp: Map<string, number>, op: string): void {
  byOp.set(op, (byOp.get(op) ?? 0) + 1);
}
