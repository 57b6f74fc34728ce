import { createRequire } from "node:module";
import Sqlite from "better-sqlite3";
import type SqliteDb from "better-sqlite3";
import type pg from "pg";

// pg is loaded only for a PostgreSQL URL: on SQLite (the CLI's usual case) it would cost about 100 ms of startup.
const require = createRequire(import.meta.url);
const loadPg = (): typeof pg => require("pg") as typeof pg;

/**
 * The hot path's SQL, run straight on the driver with prepared statements
 * cached per text. Prisma stays the tool for the schema, migrations and the
 * cold paths (CLI, console, recovery); per call it costs 7x to 110x the raw
 * driver on this machine (shared/reference/prisma-offline), and its SQLite
 * adapter prepares every statement anew. The statements here are written once,
 * with `?` placeholders and double-quoted identifiers, and run on both
 * providers; values are written in the same formats Prisma writes, so either
 * side reads what the other wrote.
 */
export type SqlValue = string | number | boolean | null | undefined | Date;

export interface Sql {
  /** Rows of a statement (for statements with RETURNING too). */
  all<T>(text: string, params?: readonly SqlValue[]): Promise<T[]>;
  /** How many rows a statement changed. */
  run(text: string, params?: readonly SqlValue[]): Promise<number>;
}

/**
 * Connection settings. WAL with synchronous=NORMAL: a commit is durable
 * against a process crash (kill -9), and against power loss up to the last
 * checkpoint. A 16 MB page cache and a checkpoint every 10,000 pages (about
 * 40 MB of WAL) keep the hot tables' pages in memory and write each page out
 * once per checkpoint, not once per commit.
 */
export const SQLITE_PRAGMAS = ["journal_mode = WAL", "synchronous = NORMAL", "cache_size = -16384", "wal_autocheckpoint = 10000"] as const;

export type QueryListener = (e: { query: string; params: string; durationMs: number }) => void;

/** Prisma's SQLite adapter writes DateTime as ISO 8601 with an explicit +00:00 offset. */
export const sqliteDate = (d: Date): string => d.toISOString().replace("Z", "+00:00");

/** A stored DateTime read back on either provider (ISO text on SQLite, a Date on PostgreSQL). */
export function toDate(v: unknown): Date {
  return v instanceof Date ? v : new Date(String(v));
}
export const toDateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : toDate(v));
export const toBool = (v: unknown): boolean => v === true || v === 1 || v === 1n;

function sqliteValue(v: SqlValue): string | number | null {
  if (v === undefined || v === null) return null;
  if (v instanceof Date) return sqliteDate(v);
  if (typeof v === "boolean") return v ? 1 : 0;
  return v;
}

/**
 * SQLite: statements run synchronously on a connection of their own. The
 * caller (Database) serializes them with every Prisma call through one
 * mutex, so neither connection ever waits on the other's lock.
 */
export class SqliteSql {
  readonly #conn: SqliteDb.Database;
  readonly #cache = new Map<string, SqliteDb.Statement>();

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

  #statement(text: string): SqliteDb.Statement {
    let st = this.#cache.get(text);
    if (!st) {
      st = this.#conn.prepare(text);
      if (st.reader) st.safeIntegers(false);
      this.#cache.set(text, st);
    }
    return st;
  }

  allSync<T>(text: string, params: readonly SqlValue[] = []): T[] {
    const t0 = this.onQuery ? performance.now() : 0;
    const st = this.#statement(text);
    const args = params.map(sqliteValue);
    const rows = st.reader ? (st.all(...args) as T[]) : (st.run(...args), []);
    if (this.onQuery) this.onQuery({ query: text, params: JSON.stringify(args), durationMs: performance.now() - t0 });
    return rows;
  }

  runSync(text: string, params: readonly SqlValue[] = []): number {
    const t0 = this.onQuery ? performance.now() : 0;
    const st = this.#statement(text);
    const args = params.map(sqliteValue);
    const changes = st.reader ? (st.all(...args), 0) : st.run(...args).changes;
    if (this.onQuery) this.onQuery({ query: text, params: JSON.stringify(args), durationMs: performance.now() - t0 });
    return changes;
  }

  /** The same statements as an async Sql, for code written once for both providers. */
  readonly sql: Sql = {
    all: async (text, params) => this.allSync(text, params),
    run: async (text, params) => this.runSync(text, params),
  };
}

const TIMESTAMP = 1114;
const INT8 = 20;

/** `?` placeholders to PostgreSQL's `$n` (our statements never hold a literal `?`). */
export function numbered(text: string): string {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
}

function pgValue(v: SqlValue): string | number | boolean | null {
  if (v === undefined || v === null) return null;
  // TIMESTAMP(3) without time zone: the written offset is ignored, so write UTC.
  if (v instanceof Date) return v.toISOString();
  return v;
}

/** PostgreSQL: its own small pool, named (server-side prepared) statements. */
export class PgSql {
  readonly pool: pg.Pool;
  readonly #names = new Map<string, { name: string; text: string }>();

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

  #named(text: string): { name: string; text: string } {
    let q = this.#names.get(text);
    if (!q) {
      q = { name: `sb${this.#names.size}`, text: numbered(text) };
      this.#names.set(text, q);
    }
    return q;
  }

  async #query(client: pg.Pool | pg.PoolClient, text: string, params: readonly SqlValue[]): Promise<pg.QueryResult> {
    const q = this.#named(text);
    const values = params.map(pgValue);
    const t0 = this.onQuery ? performance.now() : 0;
    const r = await client.query({ name: q.name, text: q.text, values });
    if (this.onQuery) this.onQuery({ query: q.text, params: JSON.stringify(values), durationMs: performance.now() - t0 });
    return r;
  }

  on(client: pg.Pool | pg.PoolClient): Sql {
    return {
      all: async <T>(text: string, params: readonly SqlValue[] = []) => (await this.#query(client, text, params)).rows as T[],
      run: async (text, params = []) => (await this.#query(client, text, params)).rowCount ?? 0,
    };
  }

  /** Plain statements (BEGIN, COMMIT) on a transaction's client. */
  async control(client: pg.PoolClient, text: string): Promise<void> {
    const t0 = this.onQuery ? performance.now() : 0;
    await client.query(text);
    if (this.onQuery) this.onQuery({ query: text, params: "[]", durationMs: performance.now() - t0 });
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}
