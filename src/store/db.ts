import path from "node:path";
import fs from "node:fs";
import { PrismaBetterSqlite3 } from "@prisma/adapter-better-sqlite3";
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient as SqliteClient, Prisma } from "./generated/sqlite/client.js";
import { PrismaClient as PgClient } from "./generated/postgresql/client.js";
import { Mutex } from "./mutex.js";
import { StoreError, isRetryable, isUnavailable } from "./errors.js";

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
 * One database handle for the process. Every access goes through `read`,
 * `write` or `transaction`:
 * - On SQLite all of them are serialized by one mutex, so no statement can
 *   slip into another caller's open transaction on the shared connection.
 *   Across processes, busy_timeout makes a statement wait for the file lock,
 *   and a whole transaction is retried with bounded backoff if it still fails.
 * - On PostgreSQL they use the pool directly; the database does the locking.
 *   Transactions retry on serialization failures and deadlocks.
 */
export class Database {
  readonly provider: Provider;
  readonly client: Client;
  readonly #mutex = new Mutex();
  readonly #serialize: boolean;
  readonly #maxRetries: number;
  readonly #faults: StoreFaults | undefined;
  #closed = false;

  constructor(readonly options: DatabaseOptions) {
    this.provider = providerOf(options.url);
    this.#faults = options.faults;
    this.#maxRetries = options.maxRetries ?? 8;
    if (this.provider === "sqlite") {
      const adapter = new PrismaBetterSqlite3({ url: `file:${sqliteFile(options.url)}`, timeout: options.busyTimeoutMs ?? 5000 });
      this.client = new SqliteClient({ adapter, ...(options.onQuery ? { log: [{ emit: "event", level: "query" }] } : {}) }) as Client;
      this.#serialize = true;
    } else {
      const adapter = new PrismaPg({ connectionString: options.url, max: options.poolSize ?? 10, connectionTimeoutMillis: 5000 });
      this.client = new PgClient({ adapter, ...(options.onQuery ? { log: [{ emit: "event", level: "query" }] } : {}) }) as unknown as Client;
      this.#serialize = false;
    }
    if (options.onQuery) {
      const on = options.onQuery;
      (this.client as unknown as { $on(e: "query", cb: (q: { query: string; params: string; duration: number }) => void): void }).$on("query", (q) => on({ query: q.query, params: q.params, durationMs: Number(q.duration) }));
    }
  }

  /** Applies connection settings. Called once by openDatabase. */
  async init(): Promise<void> {
    if (this.provider === "sqlite") {
      await this.client.$queryRawUnsafe("PRAGMA journal_mode = WAL");
      await this.client.$executeRawUnsafe("PRAGMA synchronous = NORMAL");
    } else {
      await this.client.$queryRawUnsafe("SELECT 1");
    }
  }

  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreError("Unavailable", "The database handle is closed."));
    return this.#serialize ? this.#mutex.run(fn) : fn();
  }

  /** A read outside any transaction. */
  read<T>(fn: (c: Client) => Promise<T>): Promise<T> {
    return this.#withRetry("read", () => this.#exclusive(() => fn(this.client)));
  }

  /** A single-statement write outside any transaction. */
  write<T>(fn: (c: Client) => Promise<T>): Promise<T> {
    return this.#withRetry("write", () => this.#exclusive(() => fn(this.client)));
  }

  /**
   * Runs `fn` in one interactive transaction, retried as a whole on busy or
   * serialization errors. If the commit itself fails after `fn` finished, the
   * outcome is unknown: that is reported as StoreError("CommitUnknown").
   */
  transaction<T>(op: string, fn: (tx: TxClient) => Promise<T>): Promise<T> {
    return this.#withRetry(op, () =>
      this.#exclusive(async () => {
        this.#faults?.beforeTransaction?.(op);
        let bodyDone = false;
        let result: T;
        try {
          result = await this.client.$transaction(
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
            throw new StoreError("CommitUnknown", `The commit of "${op}" was sent but not acknowledged; re-read to learn its outcome.`, { cause: e });
          }
          throw e;
        }
        try {
          this.#faults?.afterCommit?.(op);
        } catch (e) {
          throw new StoreError("CommitUnknown", `The commit of "${op}" was sent but not acknowledged; re-read to learn its outcome.`, { cause: e });
        }
        return result;
      }),
    );
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
        if (isRetryable(e)) throw new StoreError("Busy", `The database stayed busy during "${op}" after ${i + 1} attempts; another process may hold a long lock.`, { cause: e });
        if (isUnavailable(e)) throw new StoreError("Unavailable", `The database could not be reached during "${op}". Check DATABASE_URL and that the server is up.`, { cause: e });
        throw e;
      }
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#exclusive(async () => {
      this.#closed = true;
      await this.client.$disconnect();
    }).catch(async () => {
      this.#closed = true;
      await this.client.$disconnect();
    });
  }
}
