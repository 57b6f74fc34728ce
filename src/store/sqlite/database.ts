import { StoreError } from "../errors.js";
import { queryBuilder, type Query, type QueryBuilder, type Sql } from "../sql.js";
import type { StoreHealthReport } from "../health.js";
import { CallRules, closedError } from "../call-rules.js";
import { sqliteFile, type ClientCall, type CommonOptions, type Database } from "../db.js";
import { Mutex } from "./mutex.js";
import { GroupCommit } from "./group-commit.js";
import { SqliteSql, sqliteDriverPath } from "./sql.js";
import { Checkpointer } from "./checkpointer.js";
import { FileIdentity } from "./file-identity.js";

/** What only the SQLite back end reads of DatabaseOptions. */
export interface SqliteOptions {
  /** How long one statement waits for another process's SQLite lock (busy_timeout). */
  busyTimeoutMs?: number;
  /** Told once when the SQLite file is found deleted or replaced; from then on every call is refused. */
  onFenced?: (reason: string) => void;
  /** How often the SQLite file's identity is checked (also after every failed call). Default 2000 ms. */
  identityCheckMs?: number;
  /**
   * Checkpoint the WAL on a worker thread (checkpointer.ts) instead of inside a
   * commit, told of each checkpoint that fails. The gateway sets it; short-lived commands do not.
   */
  checkpointWorker?: { onError(err: Error): void; everyCommits?: number; restartAtFrames?: number };
}

/**
 * The SQLite back end: one connection of its own (sql.ts), and every call of
 * the process serialized by one mutex, so no statement can slip into another
 * caller's open transaction; writes are grouped into shared commits
 * (group-commit.ts). Across processes, busy_timeout makes a statement wait for
 * the file lock, and a whole call is retried with bounded backoff if it still
 * fails. The file's identity is watched: once it is deleted or replaced,
 * every call is refused (fenced), since nothing acknowledged into it would
 * survive a restart.
 */
export class SqliteDatabase implements Database {
  readonly provider = "sqlite" as const;
  readonly q: QueryBuilder = queryBuilder("sqlite");
  readonly url: string;
  readonly busyTimeoutMs: number;
  readonly #rules: CallRules;
  readonly #mutex = new Mutex();
  readonly #sql: SqliteSql;
  readonly #group: GroupCommit;
  readonly #checkpointer: Checkpointer | undefined;
  readonly #identity: FileIdentity;
  readonly #identityTimer: NodeJS.Timeout;
  readonly #onFenced: ((reason: string) => void) | undefined;
  readonly #clients: Array<() => Promise<void>> = [];
  #closed = false;
  /** Why every call is refused: the SQLite file is no longer the one opened. */
  #fenced: string | undefined;

  constructor(options: CommonOptions & SqliteOptions) {
    this.url = options.url;
    this.busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    const maxRetries = options.maxRetries ?? 8;
    this.#onFenced = options.onFenced;
    this.#rules = new CallRules({ maxRetries, faults: options.faults, onFailure: options.onFailure, failed: () => this.#checkIdentity() });
    const file = sqliteFile(options.url);
    if (file === ":memory:")
      throw new StoreError(
        "Unavailable",
        "An in-memory SQLite database cannot be shared by the gateway's connections; use a file, e.g. DATABASE_URL=file:./data/switchboard.db",
      );
    this.#sql = new SqliteSql(file, this.busyTimeoutMs, options.onQuery);
    this.#identity = new FileIdentity(file);
    this.#identityTimer = setInterval(() => this.#checkIdentity(), options.identityCheckMs ?? 2000);
    this.#identityTimer.unref();
    const worker = options.checkpointWorker;
    if (worker)
      this.#checkpointer = new Checkpointer({
        file,
        driver: sqliteDriverPath(),
        busyTimeoutMs: this.busyTimeoutMs,
        everyCommits: worker.everyCommits ?? 32,
        restartAtFrames: worker.restartAtFrames ?? 4000,
        exclusive: (fn) => this.#exclusive(fn),
        onError: worker.onError,
      });
    this.#group = new GroupCommit({
      // Each group commit first checks the file is still the one opened (one stat per commit): nothing
      // is acknowledged into a deleted or replaced file.
      sql: this.#sql,
      exclusive: (fn) => (this.#checkIdentity(), this.#exclusive(fn)),
      faults: options.faults,
      busyBudgetMs: this.busyTimeoutMs * (maxRetries + 1),
      committed: this.#checkpointer ? () => this.#checkpointer!.committed() : undefined,
    });
  }

  async init(): Promise<void> {
    await this.query(
      "init",
      this.q.selectNoFrom((eb) => eb.lit(1).as("one")),
    );
  }

  health(): StoreHealthReport {
    if (this.#fenced) return { ok: false, fenced: true, reason: this.#fenced };
    return this.#rules.report();
  }

  /** Checks the SQLite file is still the one opened; if not, refuses every call from now on. */
  #checkIdentity(): void {
    if (this.#fenced || this.#closed) return;
    const changed = this.#identity.changed();
    if (!changed) return;
    this.#fenced = `${changed}. Nothing is accepted any more: restore the file (or its backup) and restart the gateway.`;
    this.#onFenced?.(this.#fenced);
  }

  #refusal(): StoreError | undefined {
    if (this.#closed) return closedError();
    if (this.#fenced) return new StoreError("Unavailable", this.#fenced);
    return undefined;
  }

  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const refused = this.#refusal();
    if (refused) return Promise.reject(refused);
    return this.#mutex.run(fn);
  }

  attachClient(disconnect: () => Promise<void>): ClientCall {
    this.#clients.push(disconnect);
    return (op, fn) =>
      this.#rules.observe(
        op,
        this.#rules.retry(op, () => this.#exclusive(async () => (this.#rules.inject(op), fn()))),
      );
  }

  /** Grouped with the writes of the same turn of the event loop; a lone one autocommits. */
  writeReturning<R>(op: string, q: Query<R>): Promise<R[]> {
    return this.#rules.observe(
      op,
      this.#grouped(op, (s) => s.all(q), true),
    );
  }

  query<R>(op: string, q: Query<R>): Promise<R[]> {
    return this.#rules.call(op, () => this.#read(op, () => this.#sql.allSync(q)));
  }

  exec(op: string, q: Query<unknown>): Promise<number> {
    return this.#rules.observe(
      op,
      this.#grouped(op, async (s) => s.run(q), true),
    );
  }

  get statements(): number {
    return this.#sql.statements;
  }

  get statementsByOp(): ReadonlyMap<string, number> {
    return this.#sql.byOp;
  }

  #read<T>(op: string, run: () => T): Promise<T> {
    const refused = this.#refusal();
    if (refused) return Promise.reject(refused);
    const once = () => {
      this.#sql.op = op;
      return run();
    };
    // A synchronous statement cannot interleave with anything: it needs the mutex only when someone holds it.
    if (this.#mutex.pending === 0) {
      try {
        return Promise.resolve(once());
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return this.#mutex.run(async () => once());
  }

  /**
   * Runs `fn` in one transaction: in a group commit with the other writes of
   * the same turn of the event loop; a failing unit leaves nothing behind and
   * the others still commit (group-commit.ts).
   */
  sqlTransaction<T>(op: string, fn: (q: Sql) => Promise<T>): Promise<T> {
    return this.#rules.observe(op, this.#grouped(op, fn));
  }

  #grouped<T>(op: string, fn: (q: Sql) => Promise<T>, single = false): Promise<T> {
    const refused = this.#refusal();
    if (refused) return Promise.reject(refused);
    return this.#group.run(op, fn, single);
  }

  /** The WAL checkpointer's counts, when it runs (tests read them). */
  get checkpointStats(): { checkpoints: number; restarts: number } | undefined {
    return this.#checkpointer?.stats;
  }

  /** Group commits so far and the units they carried (benchmarks report the grouping). */
  get groupStats(): { commits: number; units: number } {
    return this.#group.stats;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    clearInterval(this.#identityTimer);
    // The checkpointer's connection closes first, so the writing connection is the last one and
    // its close checkpoints the whole WAL (and removes it).
    await this.#checkpointer?.stop();
    const shut = async () => {
      this.#closed = true;
      for (const disconnect of this.#clients.splice(0)) await disconnect();
      this.#sql.close();
    };
    await this.#exclusive(shut).catch(shut);
  }
}
