import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { inject } from "vitest";
import { type Database, openDatabase, type StoreFaults } from "../../src/store/index.js";

export const PROVIDERS = ["sqlite", "postgresql"] as const;
export type TestProvider = (typeof PROVIDERS)[number];

let counter = 0;

/** A fresh, empty database of the given provider: a temp SQLite file, or a new PostgreSQL database. */
export async function freshDatabaseUrl(provider: TestProvider): Promise<string> {
  if (provider === "sqlite") {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-test-"));
    return `file:${path.join(dir, "test.db")}`;
  }
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

export interface TestDb {
  db: Database;
  url: string;
  close(): Promise<void>;
}

/** A migrated database of the provider, ready for the stores. */
export async function openTestDb(provider: TestProvider, opts: { faults?: StoreFaults; url?: string } = {}): Promise<TestDb> {
  const url = opts.url ?? (await freshDatabaseUrl(provider));
  const db = await openDatabase({ url, faults: opts.faults });
  return { db, url, close: () => db.close() };
}
