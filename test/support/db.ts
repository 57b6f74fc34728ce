import { inject } from "vitest";
import fs from "node:fs";
import { tempSqliteUrl } from "./temp-sqlite.js";
import { type Database, migrate, openDatabase, type StoreFaults } from "../../src/store/index.js";
import { SqliteDatabase } from "../../src/store/sqlite/database.js";

export const PROVIDERS = ["sqlite", "postgresql"] as const;
export type TestProvider = (typeof PROVIDERS)[number];

let counter = 0;

/** A fresh, empty database of the given provider: a temp SQLite file, or a new PostgreSQL database. */
export async function freshDatabaseUrl(provider: TestProvider): Promise<string> {
  if (provider === "sqlite") return tempSqliteUrl("switchboard-test-", "test.db");
  const admin = inject("pgUrl");
  // Only the `pg` vitest project starts PostgreSQL (test/support/global-setup.ts).
  if (!admin) throw new Error("this test needs PostgreSQL: name its file *.pg.test.ts so it runs in the `pg` project (see test/README.md)");
  const name = `t_${process.pid}_${Date.now().toString(36)}_${counter++}`;
  const { default: pg } = await import("pg");
  const c = new pg.Client({ connectionString: admin });
  await c.connect();
  try {
    await c.query(`CREATE DATABASE "${name}"`);
  } finally {
    await c.end();
  }
  const u = new URL(admin);
  u.pathname = `/${name}`;
  return u.toString();
}

let template: Promise<string> | undefined;

/**
 * A fresh SQLite database with every migration applied: a copy of one file
 * migrated once per worker, because running the migrations costs 50-180 ms a
 * database (the unit tier made about 100). For a test that does not judge
 * migrating itself; `freshDatabaseUrl` gives an empty file.
 */
export async function freshMigratedSqliteUrl(): Promise<string> {
  template ??= (async () => {
    const url = await freshDatabaseUrl("sqlite");
    await migrate(url);
    return url.slice("file:".length);
  })();
  const source = await template;
  const url = tempSqliteUrl("switchboard-test-", "test.db");
  // migrate() closed its connection, which checkpoints the WAL into the main file.
  fs.copyFileSync(source, url.slice("file:".length));
  return url;
}

export interface TestDb {
  db: Database;
  url: string;
  close(): Promise<void>;
}

/** A migrated database of the provider, ready for the stores. */
export async function openTestDb(provider: TestProvider, opts: { faults?: StoreFaults; url?: string } = {}): Promise<TestDb> {
  const url = opts.url ?? (provider === "sqlite" ? await freshMigratedSqliteUrl() : await freshDatabaseUrl(provider));
  const db = await openDatabase({ url, faults: opts.faults });
  return { db, url, close: () => db.close() };
}

/** The SQLite back end of a database, for what only it has (group commits, the WAL checkpointer's counts). */
export function sqliteOf(db: Database): SqliteDatabase {
  if (!(db instanceof SqliteDatabase)) throw new Error(`a SQLite database was expected, not ${db.provider}`);
  return db;
}
