import type { PrismaClient as SqliteClient, Prisma } from "../../src/store/generated/sqlite/client.js";
import { sqliteFile, type ClientCall, type Database } from "../../src/store/db.js";
import { commitUnknown } from "../../src/store/call-rules.js";
import { StoreError } from "../../src/store/errors.js";
import { SqliteDatabase } from "../../src/store/sqlite/database.js";

/** Both generated clients expose the same model API for our models; code against one type. */
export type Client = SqliteClient;
export type TxClient = Prisma.TransactionClient;

/**
 * Prisma's client on a Database's own database, for tests' checks (no store
 * code uses it: docs/DESIGN.md, "Data access"). Each call runs as a call of
 * the Database (Database.attachClient): serialized with the store's
 * statements on SQLite (its connection is a second one, and the mutex keeps
 * the two from ever overlapping), retried on busy or serialization errors,
 * refused once the handle is closed, seen by the fault hooks' onStatement;
 * the client disconnects when the Database closes.
 */
export interface TestPrisma {
  /** A read outside any transaction. */
  read<T>(fn: (c: Client) => Promise<T>, op?: string): Promise<T>;
  /** A single-statement write outside any transaction. */
  write<T>(fn: (c: Client) => Promise<T>, op?: string): Promise<T>;
  /**
   * `fn` in one interactive transaction, retried as a whole on busy or
   * serialization errors. If the commit itself fails after `fn` finished, the
   * outcome is unknown: StoreError("CommitUnknown").
   */
  transaction<T>(op: string, fn: (tx: TxClient) => Promise<T>): Promise<T>;
}

const attached = new WeakMap<Database, TestPrisma>();

/** The Prisma client of `db` (one per Database, opened on first use). */
export function prisma(db: Database): TestPrisma {
  let p = attached.get(db);
  if (!p) {
    p = attach(db);
    attached.set(db, p);
  }
  return p;
}

function attach(db: Database): TestPrisma {
  let client: Promise<Client> | undefined;
  const call: ClientCall = db.attachClient(async () => {
    await (await client?.catch(() => undefined))?.$disconnect();
  });
  const opened = () => (client ??= open(db));
  const once = <T>(op: string, fn: (c: Client) => Promise<T>) => call(op, async () => fn(await opened()));
  return {
    read: (fn, op = "read") => once(op, fn),
    write: (fn, op = "write") => once(op, fn),
    transaction: (op, fn) =>
      call(op, async () => {
        let bodyDone = false;
        try {
          return await (await opened()).$transaction(
            async (tx) => {
              const r = await fn(tx);
              bodyDone = true;
              return r;
            },
            { timeout: 20_000, maxWait: 20_000 },
          );
        } catch (e) {
          if (bodyDone && !(e instanceof StoreError)) throw commitUnknown(op, e);
          throw e;
        }
      }),
  };
}

async function open(db: Database): Promise<Client> {
  if (db instanceof SqliteDatabase) {
    const [{ PrismaBetterSqlite3 }, { PrismaClient }] = await Promise.all([
      import("@prisma/adapter-better-sqlite3"),
      import("../../src/store/generated/sqlite/client.js"),
    ]);
    return new PrismaClient({ adapter: new PrismaBetterSqlite3({ url: `file:${sqliteFile(db.url)}`, timeout: db.busyTimeoutMs }) });
  }
  const [{ PrismaPg }, { PrismaClient }] = await Promise.all([import("@prisma/adapter-pg"), import("../../src/store/generated/postgresql/client.js")]);
  const adapter = new PrismaPg({ connectionString: db.url, max: 10, connectionTimeoutMillis: 5000 });
  return new PrismaClient({ adapter }) as unknown as Client;
}
