import { queryBuilder, type Query, type QueryBuilder, type Sql } from "../sql.js";
import type { StoreHealthReport } from "../health.js";
import { CallRules, closedError } from "../call-rules.js";
import type { ClientCall, CommonOptions, Database } from "../db.js";
import { PgGroupCommit } from "./group-commit.js";
import { PgSql } from "./sql.js";

/** What only the PostgreSQL back end reads of DatabaseOptions. */
export interface PostgresOptions {
  /** The pool's size. */
  poolSize?: number;
  /** Told when an idle connection of the pool fails (a server restart); the next query reconnects. */
  onIdleError?: (err: Error) => void;
}

/**
 * The PostgreSQL back end: a pool of its own (sql.ts); the database does the
 * locking. A call is retried as a whole on serialization failures and
 * deadlocks; a commit that was sent but not acknowledged is CommitUnknown.
 */
export class PostgresDatabase implements Database {
  readonly provider = "postgresql" as const;
  readonly q: QueryBuilder = queryBuilder("postgresql");
  readonly url: string;
  readonly #rules: CallRules;
  readonly #pg: PgSql;
  readonly #clients: Array<() => Promise<void>> = [];
  readonly #group: PgGroupCommit;
  #closed = false;

  constructor(options: CommonOptions & PostgresOptions) {
    this.url = options.url;
    this.#rules = new CallRules({ maxRetries: options.maxRetries ?? 8, faults: options.faults, onFailure: options.onFailure });
    this.#pg = new PgSql(options.url, options.poolSize ?? 10, options.onQuery, options.onIdleError);
    this.#group = new PgGroupCommit({
      pg: this.#pg,
      faults: options.faults,
      retry: (op, attempt) => this.#rules.retry(op, attempt),
      inject: (op) => this.#rules.inject(op),
      refusal: () => (this.#closed ? closedError() : undefined),
    });
  }

  async init(): Promise<void> {
    await this.query(
      "init",
      this.q.selectNoFrom((eb) => eb.lit(1).as("one")),
    );
  }

  health(): StoreHealthReport {
    return this.#rules.report();
  }

  #refused<T>(run: () => Promise<T>): Promise<T> {
    return this.#closed ? Promise.reject(closedError()) : run();
  }

  attachClient(disconnect: () => Promise<void>): ClientCall {
    this.#clients.push(disconnect);
    return (op, fn) => this.#rules.call(op, () => this.#refused(fn));
  }

  /** Grouped with the writes of the same turn of the event loop; a lone one autocommits (RETURNING needs nothing more). */
  writeReturning<R>(op: string, q: Query<R>): Promise<R[]> {
    return this.#rules.observe(
      op,
      this.#refused(() => this.#group.run(op, (s) => s.all(q), true)),
    );
  }

  query<R>(op: string, q: Query<R>): Promise<R[]> {
    return this.#rules.call(op, () => this.#refused(() => this.#pg.on(this.#pg.pool, op).all(q)));
  }

  exec(op: string, q: Query<unknown>): Promise<number> {
    return this.#rules.observe(
      op,
      this.#refused(() => this.#group.run(op, (s) => s.run(q), true)),
    );
  }

  get statements(): number {
    return this.#pg.statements;
  }

  get statementsByOp(): ReadonlyMap<string, number> {
    return this.#pg.byOp;
  }

  /**
   * Runs `fn` in one transaction: in a group commit with the other
   * transactions of the same turn of the event loop (group-commit.ts), a
   * failing unit leaving nothing behind while the others still commit; the
   * group is retried as a whole on serialization failures and deadlocks.
   */
  sqlTransaction<T>(op: string, fn: (q: Sql) => Promise<T>): Promise<T> {
    return this.#rules.observe(
      op,
      this.#refused(() => this.#group.run(op, fn)),
    );
  }

  /** Group commits so far and the units they carried (the bench and tests read the grouping). */
  get groupStats(): { commits: number; units: number } {
    return this.#group.stats;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const disconnect of this.#clients.splice(0)) await disconnect();
    await this.#pg.close().catch(() => {});
  }
}
