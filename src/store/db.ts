import path from "node:path";
import fs from "node:fs";
// Prisma is loaded only by the test-only entry points (see #prisma): no store code, CLI command or gateway loads it.
import type { PrismaClient as SqliteClient, Prisma } from "./generated/sqlite/client.js";
import { Mutex } from "./mutex.js";
import { StoreError, isRetryable, isUnavailable } from "./errors.js";
import { afterCommit, commitUnknown, GroupCommit } from "./group-commit.js";
import { PgSql, queryBuilder, SqliteSql, sqliteDriverPath, type Query, type QueryBuilder, type Sql } from "./sql.js";
import { Checkpointer } from "./checkpointer.js";
import { FileIdentity, StoreOutcomes, type StoreHealthReport } from "./health.js";

/** Both generated clients expose the same model API for our models; code against one type. */
export type Client = SqliteClient;
export type TxClient = Prisma.TransactionClient;
export type Provider = "sqlite" | "postgresql";

/** Test seams for fault injection (lost commit acknowledgements, outages). Never set in production. */
export interface StoreFaults {
  /** Runs after a transaction has committed; throwing simulates a lost commit acknowledgement. */
  afterCommit?(op: string): void;
  /** Runs as the commit is sent; throwing simulates a connection lost before the commit landed. */
  beforeCommit?(op: string): void;
  /** Runs before a transaction starts; throwing simulates an unreachable database. */
  beforeTransaction?(op: string): void;
  /**
   * Runs at every attempt of every call (query, exec, read, write, either
   * kind of transaction) on both providers, named by its op; throwing a
   * driver error fails that call as the driver would (see faults.ts).
   */
  onStatement?(op: string): void;
}

export interface DatabaseOptions {
  url: string;
  /** How long one statement waits for another process's SQLite lock (busy_timeout). */
  busyTimeoutMs?: number;
  /** How many times a whole transaction is retried on busy/serialization errors. */
  maxRetries?: number;
  /** PostgreSQL pool size. */
  poolSize?: number;
  faults?: StoreFaults;
  /** Called with every SQL statement Prisma runs (benchmarks capture the hot path's statements with it). */
  onQuery?: (e: { query: string; params: string; durationMs: number }) => void;
  /** Told when an idle PostgreSQL connection of the hot path's pool fails (a server restart); the next query reconnects. */
  onIdleError?: (err: Error) => void;
  /** Told of every call that failed for good (after its retries), by op: counted in /metrics. */
  onFailure?: (op: string, err: unknown) => void;
  /** Told once when the SQLite file is found deleted or replaced; from then on every call is refused. */
  onFenced?: (reason: string) => void;
  /** How often the SQLite file's identity is checked (also after every failed call). Default 2000 ms. */
  identityCheckMs?: number;
  /**
   * SQLite: checkpoint the WAL on a worker thread (src/store/checkpointer.ts) instead of inside a
   * commit, told of each checkpoint that fails. The gateway sets it; short-lived commands do not.
   */
  checkpointWorker?: { onError(err: Error): void; everyCommits?: number; restartAtFrames?: number };
}

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

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref?.());

/**
 * One database handle for the process. Every store statement goes through
 * `query`, `exec`, `writeReturning` or `sqlTransaction` (Kysely-built, run by
 * sql.ts); `read`, `write` and `transaction` (Prisma) are for tests' checks:
 * - On SQLite all of them are serialized by one mutex, so no statement can
 *   slip into another caller's open transaction, and raw writes are grouped
 *   into shared commits.
 *   Across processes, busy_timeout makes a statement wait for the file lock,
 *   and a whole transaction is retried with bounded backoff if it still fails.
 * - On PostgreSQL they use the pool directly; the database does the locking.
 *   Transactions retry on serialization failures and deadlocks.
 */
export class Database {
  readonly provider: Provider;
  /**
   * The query builder every store statement is written with (see sql.ts):
   * `db.query(op, db.q.selectFrom("Session")...)`. It compiles for this
   * provider and never connects.
   */
  readonly q: QueryBuilder;
  readonly #mutex = new Mutex();
  readonly #serialize: boolean;
  readonly #maxRetries: number;
  readonly #faults: StoreFaults | undefined;
  #closed = false;
  /** Why every call is refused: the SQLite file is no longer the one opened. */
  #fenced: string | undefined;
  readonly #identity: FileIdentity | undefined;
  readonly #identityTimer: NodeJS.Timeout | undefined;
  readonly #outcomes = new StoreOutcomes();
  /** The hot path's raw SQL: on SQLite a connection of its own; on PostgreSQL a pool of its own. */
  readonly #sqlite: SqliteSql | undefined;
  readonly #pg: PgSql | undefined;
  readonly #group: GroupCommit | undefined;
  readonly #checkpointer: Checkpointer | undefined;
  #client: Promise<Client> | undefined;

  constructor(readonly options: DatabaseOptions) {
    this.provider = providerOf(options.url);
    this.q = queryBuilder(this.provider);
    this.#faults = options.faults;
    this.#maxRetries = options.maxRetries ?? 8;
    this.#serialize = this.provider === "sqlite";
    if (this.provider === "sqlite") {
      const file = sqliteFile(options.url);
      if (file === ":memory:")
        throw new StoreError(
          "Unavailable",
          "An in-memory SQLite database cannot be shared by the gateway's connections; use a file, e.g. DATABASE_URL=file:./data/switchboard.db",
        );
      this.#sqlite = new SqliteSql(file, options.busyTimeoutMs ?? 5000, options.onQuery);
      this.#identity = new FileIdentity(file);
      this.#identityTimer = setInterval(() => this.#checkIdentity(), options.identityCheckMs ?? 2000);
      this.#identityTimer.unref();
      if (options.checkpointWorker)
        this.#checkpointer = new Checkpointer({
          file,
          driver: sqliteDriverPath(),
          busyTimeoutMs: options.busyTimeoutMs ?? 5000,
          everyCommits: options.checkpointWorker.everyCommits ?? 32,
          restartAtFrames: options.checkpointWorker.restartAtFrames ?? 4000,
          exclusive: (fn) => this.#exclusive(fn),
          onError: options.checkpointWorker.onError,
        });
      this.#group = new GroupCommit({
        // Each group commit first checks the file is still the one opened (one stat per commit): nothing
        // is acknowledged into a deleted or replaced file.
        sql: this.#sqlite,
        exclusive: (fn) => (this.#checkIdentity(), this.#exclusive(fn)),
        faults: options.faults,
        busyBudgetMs: (options.busyTimeoutMs ?? 5000) * (this.#maxRetries + 1),
        committed: this.#checkpointer ? () => this.#checkpointer!.committed() : undefined,
      });
    } else {
      this.#pg = new PgSql(options.url, options.poolSize ?? 10, options.onQuery, options.onIdleError);
    }
  }

  /**
   * Prisma's client, for tests' assertions only (`read`, `write`,
   * `transaction`): no store code uses it (docs/DESIGN.md, "Data access"), so
   * a running gateway, the CLI and the doctor never load it (about 90 MB).
   * On SQLite it has its own connection; the mutex keeps the two from ever
   * overlapping.
   */
  #prisma(): Promise<Client> {
    this.#client ??= this.#loadPrisma();
    return this.#client;
  }

  async #loadPrisma(): Promise<Client> {
    const log = this.options.onQuery ? { log: [{ emit: "event" as const, level: "query" as const }] } : {};
    let client: Client;
    if (this.provider === "sqlite") {
      const [{ PrismaBetterSqlite3 }, { PrismaClient }] = await Promise.all([import("@prisma/adapter-better-sqlite3"), import("./generated/sqlite/client.js")]);
      const adapter = new PrismaBetterSqlite3({ url: `file:${sqliteFile(this.options.url)}`, timeout: this.options.busyTimeoutMs ?? 5000 });
      client = new PrismaClient({ adapter, ...log }) as Client;
    } else {
      const [{ PrismaPg }, { PrismaClient }] = await Promise.all([import("@prisma/adapter-pg"), import("./generated/postgresql/client.js")]);
      const adapter = new PrismaPg({ connectionString: this.options.url, max: this.options.poolSize ?? 10, connectionTimeoutMillis: 5000 });
      client = new PrismaClient({ adapter, ...log }) as unknown as Client;
    }
    if (this.options.onQuery) {
      const on = this.options.onQuery;
      (client as unknown as { $on(e: "query", cb: (q: { query: string; params: string; duration: number }) => void): void }).$on("query", (q) =>
        on({ query: q.query, params: q.params, durationMs: Number(q.duration) }),
      );
    }
    return client;
  }

  /** Checks the database answers. Called once by openDatabase. */
  async init(): Promise<void> {
    await this.query(
      "init",
      this.q.selectNoFrom((eb) => eb.lit(1).as("one")),
    );
  }

  /** What the store says about itself for /healthz: real outcomes, and the SQLite file's identity. */
  health(): StoreHealthReport {
    if (this.#fenced) return { ok: false, fenced: true, reason: this.#fenced };
    return this.#outcomes.report();
  }

  /** Checks the SQLite file is still the one opened; if not, refuses every call from now on. */
  #checkIdentity(): void {
    if (this.#fenced || this.#closed || !this.#identity) return;
    const changed = this.#identity.changed();
    if (!changed) return;
    this.#fenced = `${changed}. Nothing is accepted any more: restore the file (or its backup) and restart the gateway.`;
    this.options.onFenced?.(this.#fenced);
  }

  #refusal(): StoreError | undefined {
    if (this.#closed) return new StoreError("Unavailable", "The database handle is closed.");
    if (this.#fenced) return new StoreError("Unavailable", this.#fenced);
    return undefined;
  }

  /** Every call's outcome feeds health(); a failure is reported and, on SQLite, re-checks the file at once. */
  #observe<T>(op: string, p: Promise<T>): Promise<T> {
    return p.then(
      (v) => {
        this.#outcomes.success();
        return v;
      },
      (e: unknown) => {
        this.#outcomes.failure(op, e);
        this.#checkIdentity();
        this.options.onFailure?.(op, e);
        throw e;
      },
    );
  }

  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const refused = this.#refusal();
    if (refused) return Promise.reject(refused);
    return this.#serialize ? this.#mutex.run(fn) : fn();
  }

  /** Whether Prisma's client was ever loaded (tests check that the stores never load it). */
  get prismaLoaded(): boolean {
    return this.#client !== undefined;
  }

  /** Tests only: a Prisma read outside any transaction. */
  read<T>(fn: (c: Client) => Promise<T>, op = "read"): Promise<T> {
    return this.#observe(
      op,
      this.#withRetry(op, () => this.#exclusive(async () => (this.#inject(op), fn(await this.#prisma())))),
    );
  }

  /** Tests only: a single-statement Prisma write outside any transaction. */
  write<T>(fn: (c: Client) => Promise<T>, op = "write"): Promise<T> {
    return this.#observe(
      op,
      this.#withRetry(op, () => this.#exclusive(async () => (this.#inject(op), fn(await this.#prisma())))),
    );
  }

  /** The fault seam of one attempt of a call (tests only). */
  #inject(op: string): void {
    this.#faults?.onStatement?.(op);
  }

  /**
   * Tests only: runs `fn` in one interactive Prisma transaction, retried as a whole on busy or
   * serialization errors. If the commit itself fails after `fn` finished, the
   * outcome is unknown: that is reported as StoreError("CommitUnknown").
   */
  transaction<T>(op: string, fn: (tx: TxClient) => Promise<T>): Promise<T> {
    return this.#observe(
      op,
      this.#withRetry(op, () =>
        this.#exclusive(async () => {
          this.#faults?.beforeTransaction?.(op);
          this.#inject(op);
          let bodyDone = false;
          let result: T;
          try {
            const client = await this.#prisma();
            result = await client.$transaction(
              async (tx) => {
                const r = await fn(tx);
                bodyDone = true;
                this.#faults?.beforeCommit?.(op);
                return r;
              },
              { timeout: 20_000, maxWait: 20_000 },
            );
          } catch (e) {
            if (bodyDone && !(e instanceof StoreError)) {
              throw commitUnknown(op, e);
            }
            throw e;
          }
          afterCommit(this.#faults, op);
          return result;
        }),
      ),
    );
  }

  /** Rows a single write returns (RETURNING): grouped on SQLite, one autocommit statement on PostgreSQL. */
  writeReturning<R>(op: string, q: Query<R>): Promise<R[]> {
    if (this.#sqlite)
      return this.#observe(
        op,
        this.#grouped(op, (s) => s.all(q), true),
      );
    return this.query(op, q);
  }

  /** Rows of one statement outside any transaction. */
  query<R>(op: string, q: Query<R>): Promise<R[]> {
    return this.#observe(
      op,
      this.#withRetry(
        op,
        () => (
          this.#inject(op),
          this.#raw(
            op,
            (s) => s.all(q),
            (s) => s.allSync(q),
          )
        ),
      ),
    );
  }

  /** One write outside any transaction; resolves to the rows changed. */
  exec(op: string, q: Query<unknown>): Promise<number> {
    if (this.#sqlite)
      return this.#observe(
        op,
        this.#grouped(op, async (s) => s.run(q), true),
      );
    return this.#observe(
      op,
      this.#withRetry(
        op,
        () => (
          this.#inject(op),
          this.#raw(
            op,
            (s) => s.run(q),
            (s) => s.runSync(q),
          )
        ),
      ),
    );
  }

  /** Statements run so far on the hot path's connection(s), transaction control included (the bench divides by messages). */
  get statements(): number {
    return this.#sqlite?.statements ?? this.#pg?.statements ?? 0;
  }

  /** Statements so far by op (transaction control under "<op> BEGIN", a SQLite group's own under "group BEGIN IMMEDIATE"/"group COMMIT"). */
  get statementsByOp(): ReadonlyMap<string, number> {
    return this.#sqlite?.byOp ?? this.#pg?.byOp ?? new Map();
  }

  #raw<T>(op: string, onPg: (q: Sql) => Promise<T>, onSqlite: (s: SqliteSql) => T): Promise<T> {
    const refused = this.#refusal();
    if (refused) return Promise.reject(refused);
    const sqlite = this.#sqlite;
    if (!sqlite) return onPg(this.#pg!.on(this.#pg!.pool, op));
    const run = () => {
      sqlite.op = op;
      return onSqlite(sqlite);
    };
    // A synchronous statement cannot interleave with anything: it needs the mutex only when someone holds it.
    if (this.#mutex.pending === 0) {
      try {
        return Promise.resolve(run());
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return this.#mutex.run(async () => run());
  }

  /**
   * Runs `fn` in one transaction of raw statements, with the same guarantees
   * as `transaction`: retried as a whole on busy or serialization errors, and
   * CommitUnknown when a commit was sent but its outcome is not known.
   */
  sqlTransaction<T>(op: string, fn: (q: Sql) => Promise<T>): Promise<T> {
    if (this.#sqlite) return this.#observe(op, this.#grouped(op, fn));
    return this.#observe(
      op,
      this.#withRetry(op, () => this.#pgTransaction(op, this.#pg!, fn)),
    );
  }

  #grouped<T>(op: string, fn: (q: Sql) => Promise<T>, single = false): Promise<T> {
    const refused = this.#refusal();
    if (refused) return Promise.reject(refused);
    return this.#group!.run(op, fn, single);
  }

  /** The WAL checkpointer's counts, when it runs (tests read them). */
  get checkpointStats(): { checkpoints: number; restarts: number } | undefined {
    return this.#checkpointer?.stats;
  }

  /** SQLite group commits so far and the units they carried (benchmarks report the grouping). */
  get groupStats(): { commits: number; units: number } {
    return this.#group?.stats ?? { commits: 0, units: 0 };
  }

  async #pgTransaction<T>(op: string, p: PgSql, fn: (q: Sql) => Promise<T>): Promise<T> {
    const refused = this.#refusal();
    if (refused) throw refused;
    this.#faults?.beforeTransaction?.(op);
    this.#inject(op);
    const client = await p.pool.connect();
    let broken: Error | undefined;
    let commitSent = false;
    try {
      await p.control(client, "BEGIN", op);
      const result = await fn(p.on(client, op));
      try {
        this.#faults?.beforeCommit?.(op);
      } catch (e) {
        throw commitUnknown(op, e);
      }
      commitSent = true;
      await p.control(client, "COMMIT", op);
      afterCommit(this.#faults, op);
      return result;
    } catch (e) {
      if (!commitSent) await client.query("ROLLBACK").catch((err: Error) => (broken = err));
      else if (!(e instanceof StoreError)) {
        broken = e as Error;
        throw commitUnknown(op, e);
      }
      throw e;
    } finally {
      client.release(broken);
    }
  }

  async #withRetry<T>(op: string, attempt: () => Promise<T>): Promise<T> {
    for (let i = 0; ; i++) {
      try {
        return await attempt();
      } catch (e) {
        if (e instanceof StoreError) throw e;
        if (isRetryable(e) && i < this.#maxRetries) {
          await sleep(Math.min(1000, 10 * 2 ** i) * (0.5 + Math.random()));
          continue;
        }
        if (isRetryable(e))
          throw new StoreError("Busy", `The database stayed busy during "${op}" after ${i + 1} attempts; another process may hold a long lock.`, { cause: e });
        if (isUnavailable(e))
          throw new StoreError("Unavailable", `The database could not be reached during "${op}". Check DATABASE_URL and that the server is up.`, { cause: e });
        throw e;
      }
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    if (this.#identityTimer) clearInterval(this.#identityTimer);
    // The checkpointer's connection closes first, so the writing connection is the last one and
    // its close checkpoints the whole WAL (and removes it).
    await this.#checkpointer?.stop();
    const shut = async () => {
      this.#closed = true;
      await (await this.#client?.catch(() => undefined))?.$disconnect();
      this.#sqlite?.close();
    };
    await this.#exclusive(shut).catch(shut);
    await this.#pg?.close().catch(() => {});
  }
}
