import { createRequire } from "node:module";
import Sqlite from "better-sqlite3";
import type SqliteDb from "better-sqlite3";
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
  type CompiledQuery,
} from "kysely";
import type pg from "pg";
import type { DB } from "./generated/kysely/db.js";

// pg is loaded only for a PostgreSQL URL: on SQLite (the CLI's usual case) it would cost about 100 ms of startup.
const require = createRequire(import.meta.url);
const loadPg = (): typeof pg => require("pg") as typeof pg;

/** Where better-sqlite3 resolves from here (the WAL checkpointer's worker loads the same driver). */
export const sqliteDriverPath = (): string => require.resolve("better-sqlite3");

/**
 * The one way `src/store` talks to the database (docs/DESIGN.md, "Data
 * access"): every statement is built with Kysely over the row types generated
 * from the Prisma schema (`src/store/generated/kysely/db.ts`, written by
 * `npm run db:generate`), compiled for the provider, and run here on the
 * driver with prepared statements cached per text. Kysely only builds and
 * compiles; the Database (db.ts) decides where and when a statement runs
 * (the SQLite mutex, group commit, retries, fault seams).
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

/**
 * Connection settings. WAL with synchronous=NORMAL: a commit is durable
 * against a process crash (kill -9), and against power loss up to the last
 * checkpoint. A 16 MB page cache keeps the hot tables' pages in memory. The
 * gateway checkpoints on a worker thread (checkpointer.ts); the connection's
 * own checkpoint, every 10,000 pages (about 40 MB of WAL), is the backstop
 * for a worker that fails and what short-lived commands use.
 */
export const SQLITE_PRAGMAS = ["journal_mode = WAL", "synchronous = NORMAL", "cache_size = -16384", "wal_autocheckpoint = 10000"] as const;

export type QueryListener = (e: { query: string; params: string; durationMs: number }) => void;

/** Prisma's SQLite adapter writes DateTime as ISO 8601 with an explicit +00:00 offset. */
export const sqliteDate = (d: Date): string => d.toISOString().replace("Z", "+00:00");

/** A stored DateTime read back on either provider (ISO text on SQLite, a Date on PostgreSQL); SQLite's CURRENT_TIMESTAMP is UTC. */
export function toDate(v: unknown): Date {
  if (v instanceof Date) return v;
  const s = String(v);
  return new Date(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(s) ? `${s.replace(" ", "T")}Z` : s);
}
export const toDateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : toDate(v));
export const toBool = (v: unknown): boolean => v === true || v === 1 || v === 1n;

function sqliteValue(v: unknown): unknown {
  if (v === undefined || v === null) return null;
  if (v instanceof Date) return sqliteDate(v);
  if (typeof v === "boolean") return v ? 1 : 0;
  return v;
}

/** How a SQLite column's stored value becomes the generated type, by its declared type (Prisma's migrations declare DATETIME and BOOLEAN). */
type Column = { name: string; to: (v: unknown) => unknown };
const READ_AS: Record<string, (v: unknown) => unknown> = { DATETIME: toDateOrNull, BOOLEAN: (v) => (v === null ? null : toBool(v)) };

interface Prepared {
  st: SqliteDb.Statement;
  /** The columns whose stored form differs from the generated type. */
  convert: Column[];
}

/**
 * SQLite: statements run synchronously on the process's one connection. The
 * caller (Database) serializes them through one mutex, so no statement ever
 * slips into another caller's transaction.
 */
export class SqliteSql {
  readonly #conn: SqliteDb.Database;
  readonly #cache = new Map<string, Prepared>();
  /** Statements run so far, transaction control included (the bench reports statements per message). */
  statements = 0;
  /** Statements so far by the op that ran them (the Database sets `op` before each call's statements; the bench reports the breakdown). */
  readonly byOp = new Map<string, number>();
  op = "?";

  constructor(
    file: string,
    busyTimeoutMs: number,
    private readonly onQuery?: QueryListener,
  ) {
    this.#conn = new Sqlite(file, { timeout: busyTimeoutMs });
    for (const p of SQLITE_PRAGMAS) this.#conn.pragma(p);
  }

  close(): void {
    if (this.#conn.open) this.#conn.close();
  }

  /** False once SQLite rolled the transaction back by itself (a full disk, an I/O error). */
  get inTransaction(): boolean {
    return this.#conn.inTransaction;
  }

  #prepared(text: string): Prepared {
    let p = this.#cache.get(text);
    if (!p) {
      const st = this.#conn.prepare(text);
      const convert: Column[] = [];
      if (st.reader) {
        st.safeIntegers(false);
        for (const c of st.columns()) {
          const to = c.type ? READ_AS[c.type.toUpperCase()] : undefined;
          if (to) convert.push({ name: c.name, to });
        }
      }
      p = { st, convert };
      this.#cache.set(text, p);
    }
    return p;
  }

  #exec<R>(q: CompiledQuery<R>): { rows: R[]; changes: number } {
    const t0 = this.onQuery ? performance.now() : 0;
    const { st, convert } = this.#prepared(q.sql);
    const args = q.parameters.map(sqliteValue);
    let rows: R[] = [];
    let changes = 0;
    this.statements++;
    countOp(this.byOp, this.op);
    if (st.reader) {
      rows = st.all(...args) as R[];
      changes = rows.length;
      if (convert.length) for (const r of rows as Record<string, unknown>[]) for (const c of convert) r[c.name] = c.to(r[c.name]);
    } else changes = st.run(...args).changes;
    if (this.onQuery) this.onQuery({ query: q.sql, params: JSON.stringify(args), durationMs: performance.now() - t0 });
    return { rows, changes };
  }

  allSync<R>(q: Query<R>): R[] {
    return this.#exec(q.compile()).rows;
  }

  runSync(q: Query<unknown>): number {
    return this.#exec(q.compile()).changes;
  }

  /** Transaction control (BEGIN IMMEDIATE, COMMIT, ROLLBACK): plain text, counted and reported like any statement. */
  control(text: "BEGIN IMMEDIATE" | "COMMIT" | "ROLLBACK"): void {
    const t0 = this.onQuery ? performance.now() : 0;
    this.statements++;
    countOp(this.byOp, text === "BEGIN IMMEDIATE" || text === "COMMIT" || text === "ROLLBACK" ? `group ${text}` : `${this.op} ${text}`);
    this.#prepared(text).st.run();
    if (this.onQuery) this.onQuery({ query: text, params: "[]", durationMs: performance.now() - t0 });
  }

  /** The same statements as an async Sql, for code written once for both providers. */
  readonly sql: Sql = {
    all: async (q) => this.allSync(q),
    run: async (q) => this.runSync(q),
  };
}

function countOp(byOp: Map<string, number>, op: string): void {
  byOp.set(op, (byOp.get(op) ?? 0) + 1);
}

const TIMESTAMP = 1114;
const INT8 = 20;

function pgValue(v: unknown): unknown {
  if (v === undefined || v === null) return null;
  // TIMESTAMP(3) without time zone: the written offset is ignored, so write UTC.
  if (v instanceof Date) return v.toISOString();
  return v;
}

/** PostgreSQL: its own small pool, named (server-side prepared) statements. */
export class PgSql {
  readonly pool: pg.Pool;
  readonly #names = new Map<string, string>();
  /** Statements run so far, transaction control included, and by op. */
  statements = 0;
  readonly byOp = new Map<string, number>();

  constructor(
    url: string,
    max: number,
    private readonly onQuery?: QueryListener,
    onIdleError?: (err: Error) => void,
  ) {
    const driver = loadPg();
    this.pool = new driver.Pool({
      connectionString: url,
      max,
      connectionTimeoutMillis: 5000,
      types: {
        getTypeParser: ((oid: number, format?: "text" | "binary") => {
          // TIMESTAMP(3) holds UTC wall-clock time (Prisma's convention): read it as UTC.
          if (oid === TIMESTAMP) return (s: string) => new Date(`${s.replace(" ", "T")}Z`);
          if (oid === INT8) return (s: string) => Number(s);
          return driver.types.getTypeParser(oid, format);
        }) as typeof pg.types.getTypeParser,
      },
    });
    // An idle client losing its server (a restart) must not crash the process; the next query reconnects.
    this.pool.on("error", (err) => onIdleError?.(err));
  }

  #named(text: string): string {
    let name = this.#names.get(text);
    if (!name) {
      name = `sb${this.#names.size}`;
      this.#names.set(text, name);
    }
    return name;
  }

  async #query(client: pg.Pool | pg.PoolClient, q: CompiledQuery, op: string): Promise<pg.QueryResult> {
    const values = q.parameters.map(pgValue);
    const t0 = this.onQuery ? performance.now() : 0;
    this.statements++;
    countOp(this.byOp, op);
    const r = await client.query({ name: this.#named(q.sql), text: q.sql, values });
    if (this.onQuery) this.onQuery({ query: q.sql, params: JSON.stringify(values), durationMs: performance.now() - t0 });
    return r;
  }

  on(client: pg.Pool | pg.PoolClient, op: string): Sql {
    return {
      all: async <R>(q: Query<R>) => (await this.#query(client, q.compile(), op)).rows as R[],
      run: async (q) => (await this.#query(client, q.compile(), op)).rowCount ?? 0,
    };
  }

  /** Plain statements (BEGIN, COMMIT) on a transaction's client. */
  async control(client: pg.PoolClient, text: "BEGIN" | "COMMIT", op: string): Promise<void> {
    const t0 = this.onQuery ? performance.now() : 0;
    this.statements++;
    countOp(this.byOp, `${op} ${text}`);
    await client.query(text);
    if (this.onQuery) this.onQuery({ query: text, params: "[]", durationMs: performance.now() - t0 });
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}
