import { createRequire } from "node:module";
import type { CompiledQuery } from "kysely";
import type pg from "pg";
import { countOp, type Query, type QueryListener, type Sql } from "../sql.js";

// pg is loaded only for a PostgreSQL URL: on SQLite (the CLI's usual case) it would cost about 100 ms of startup.
const require = createRequire(import.meta.url);
const loadPg = (): typeof pg => require("pg") as typeof pg;

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
