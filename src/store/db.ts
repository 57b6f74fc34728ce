import path from "node:path";
import fs from "node:fs";
import { StoreError } from "./errors.js";
import type { StoreHealthReport } from "./health.js";
import type { Query, QueryBuilder, QueryListener, Sql } from "./sql.js";
import type { SqliteOptions } from "./sqlite/database.js";
import type { PostgresOptions } from "./postgres/database.js";

export type Provider = "sqlite" | "postgresql";

export function providerOf(url: string): Provider {
  if (url.startsWith("file:")) return "sqlite";
  if (/^postgres(ql)?:\/\//.test(url)) return "postgresql";
  throw new StoreError("Unavailable", `DATABASE_URL must start with file: (SQLite) or postgresql:// (PostgreSQL); got "${url.split(":")[0]}:…".`);
}

/** Absolute SQLite file path for a file: URL, creating its folder. */
export function sqliteFile(url: string): string {
  const file = url.slice("file:".length).split("?")[0]!;
  if (file === ":memory:") return file;
  const abs = path.resolve(file);
  fs.mkdirSync(path.dirname(abs), { recursive: true });
  return abs;
}

/**
 * Hook points inside a call, named by its op, on both back ends. Nothing in
 * src/ sets them: the fault-injection tests do (test/support/faults.ts), to
 * lose a commit acknowledgement, drop a connection or fail a statement with
 * the driver's own error.
 */
export interface StoreFaults {
  /** Runs after a transaction has committed; throwing stands for a lost commit acknowledgement. */
  afterCommit?(op: string): void;
  /** Runs as the commit is sent; throwing stands for a connection lost before the commit landed. */
  beforeCommit?(op: string): void;
  /** Runs before a transaction starts; throwing stands for an unreachable database. */
  beforeTransaction?(op: string): void;
  /** Runs at every attempt of every call; throwing a driver error fails that call as the driver would. */
  onStatement?(op: string): void;
}

/** What both back ends take. */
export interface CommonOptions {
  url: string;
  /** How many times a whole call is retried on busy/serialization errors. */
  maxRetries?: number;
  faults?: StoreFaults;
  /** Called with every SQL statement run (benchmarks capture the hot path's statements with it). */
  onQuery?: QueryListener;
  /** Told of every call that failed for good (after its retries), by op: counted in /metrics. */
  onFailure?: (op: string, err: unknown) => void;
}

/** What openDatabase takes: each back end reads its own fields and ignores the other's. */
export type DatabaseOptions = CommonOptions & SqliteOptions & PostgresOptions;

/** A call made through another client of the same database, run under a handle's rules (see Database.attachClient). */
export type ClientCall = <T>(op: string, fn: () => Promise<T>) => Promise<T>;

/**
 * One database handle for the process, the interface every store codes
 * against (src/store/sqlite/database.ts and src/store/postgres/database.ts
 * implement it; openDatabase picks one by the URL). Every statement is
 * Kysely-built (sql.ts) and goes through `query`, `exec`, `writeReturning`
 * or `sqlTransaction`; each call is retried as a whole on busy or
 * serialization errors, a commit whose outcome is not known is
 * StoreError("CommitUnknown"), and a closed handle refuses every call.
 */
export interface Database {
  readonly provider: Provider;
  readonly url: string;
  /**
   * The query builder every store statement is written with (see sql.ts):
   * `db.query(op, db.q.selectFrom("Session")...)`. It compiles for this
   * provider and never connects.
   */
  readonly q: QueryBuilder;
  /** Rows of one statement outside any transaction. */
  query<R>(op: string, q: Query<R>): Promise<R[]>;
  /** One write outside any transaction; resolves to the rows changed. */
  exec(op: string, q: Query<unknown>): Promise<number>;
  /** Rows a single write returns (RETURNING). */
  writeReturning<R>(op: string, q: Query<R>): Promise<R[]>;
  /** Runs `fn` in one transaction of statements. */
  sqlTransaction<T>(op: string, fn: (q: Sql) => Promise<T>): Promise<T>;
  /** Checks the database answers. Called once by openDatabase. */
  init(): Promise<void>;
  /** What the store says about itself for /healthz: real outcomes (and, on SQLite, the file's identity). */
  health(): StoreHealthReport;
  /** Statements run so far, transaction control included (the bench divides by messages). */
  readonly statements: number;
  /** Statements so far by op (transaction control under "<op> BEGIN", a SQLite group's own under "group BEGIN IMMEDIATE"/"group COMMIT"). */
  readonly statementsByOp: ReadonlyMap<string, number>;
  /**
   * Lets another client of the same database (the tests' Prisma client,
   * test/support/prisma.ts) join this handle: each call made through the
   * returned function is refused once the handle is closed, serialized with
   * every store statement on SQLite, retried, counted in health() and seen by
   * `faults.onStatement`; `disconnect` runs as the handle closes, after the
   * last of them.
   */
  attachClient(disconnect: () => Promise<void>): ClientCall;
  close(): Promise<void>;
}
