import { createRequire } from "node:module";
import Sqlite from "better-sqlite3";
import type SqliteDb from "better-sqlite3";
import type { CompiledQuery } from "kysely";
import { countOp, toBool, toDateOrNull, type Query, type QueryListener, type Sql } from "../sql.js";

const require = createRequire(import.meta.url);

/** Where better-sqlite3 resolves from here (the WAL checkpointer's worker loads the same driver). */
export const sqliteDriverPath = (): string => require.resolve("better-sqlite3");

/**
 * Connection settings. WAL with synchronous=NORMAL: a commit is durable
 * against a process crash (kill -9), and against power loss up to the last
 * checkpoint. The page cache is 4 MB (SQLite's default is 2): it holds the
 * b-trees' upper pages that every statement walks, and a leaf it misses is a
 * read from the OS's file cache. At 16 MB it filled with leaves of the 10,000
 * chats the memory bench opens, 12 MB of RSS more, for no measured gain in
 * the core bench's rate (README, "Performance"). The
 * gateway checkpoints on a worker thread (checkpointer.ts); the connection's
 * own checkpoint, every 10,000 pages (about 40 MB of WAL), is the backstop
 * for a worker that fails and what short-lived commands use.
 */
export const SQLITE_PRAGMAS = ["journal_mode = WAL", "synchronous = NORMAL", "cache_size = -4096", "wal_autocheckpoint = 10000"] as const;

/** Prisma's SQLite adapter writes DateTime as ISO 8601 with an explicit +00:00 offset. */
export const sqliteDate = (d: Date): string => d.toISOString().replace("Z", "+00:00");

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
