import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { providerOf, sqliteFile, type Provider } from "./db.js";
import { StoreError } from "./errors.js";

/**
 * Applies the committed Prisma-format migration folders
 * (prisma/<provider>/migrations/<stamp>_<name>/migration.sql) and records them
 * in Prisma's own `_prisma_migrations` table, with the same DDL and checksum
 * (sha256 of the file) that Prisma Migrate writes. So `prisma migrate deploy`
 * and `prisma migrate status` on a connected machine agree with what ran here.
 *
 * Written by hand because the Prisma CLI needs a Rust schema engine that it
 * downloads at run time; this needs nothing beyond the database driver.
 * Safe to run from several processes at once: SQLite takes an exclusive
 * transaction, PostgreSQL takes Prisma Migrate's own advisory lock.
 */
export const MIGRATIONS_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../prisma");

const TABLE_DDL: Record<Provider, string> = {
  sqlite: `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id" TEXT PRIMARY KEY NOT NULL,
    "checksum" TEXT NOT NULL,
    "finished_at" DATETIME,
    "migration_name" TEXT NOT NULL,
    "logs" TEXT,
    "rolled_back_at" DATETIME,
    "started_at" DATETIME NOT NULL DEFAULT current_timestamp,
    "applied_steps_count" INTEGER UNSIGNED NOT NULL DEFAULT 0
)`,
  postgresql: `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id" VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum" VARCHAR(64) NOT NULL,
    "finished_at" TIMESTAMPTZ,
    "migration_name" VARCHAR(255) NOT NULL,
    "logs" TEXT,
    "rolled_back_at" TIMESTAMPTZ,
    "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`,
};

/** Prisma Migrate's advisory lock key, so our runner and `prisma migrate deploy` exclude each other. */
const PG_LOCK_KEY = 72707369;

export interface MigrationResult {
  applied: string[];
  pending: string[];
}

interface Migration {
  name: string;
  script: string;
  checksum: string;
}

export function listMigrations(provider: Provider, root = MIGRATIONS_ROOT): Migration[] {
  const dir = path.join(root, provider, "migrations");
  if (!fs.existsSync(dir)) return [];
  // Sorted by code unit, as Prisma Migrate orders the folders (by bytes), and without localeCompare,
  // whose first call loads ICU's collator: about 7 ms of CPU at every start, for ASCII names.
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((name) => {
      const script = fs.readFileSync(path.join(dir, name, "migration.sql"), "utf8");
      return { name, script, checksum: crypto.createHash("sha256").update(script).digest("hex") };
    });
}

interface AppliedRow {
  migration_name: string;
  checksum: string;
  finished_at: unknown;
  rolled_back_at: unknown;
}

function plan(all: Migration[], rows: AppliedRow[]): Migration[] {
  const failed = rows.filter((r) => !r.finished_at && !r.rolled_back_at);
  if (failed.length) {
    throw new StoreError(
      "MigrationFailed",
      `Migration ${failed.map((r) => r.migration_name).join(", ")} failed earlier and needs manual resolution: fix the database, then mark it with \`prisma migrate resolve\`.`,
    );
  }
  const done = new Set(rows.filter((r) => r.finished_at && !r.rolled_back_at).map((r) => r.migration_name));
  return all.filter((m) => !done.has(m.name));
}

/** Applies every pending migration. With dryRun, only reports what is pending. */
export async function migrate(url: string, opts: { dryRun?: boolean; root?: string } = {}): Promise<MigrationResult> {
  const provider = providerOf(url);
  const all = listMigrations(provider, opts.root);
  return provider === "sqlite" ? migrateSqlite(url, all, !!opts.dryRun) : migratePg(url, all, !!opts.dryRun);
}

async function migrateSqlite(url: string, all: Migration[], dryRun: boolean): Promise<MigrationResult> {
  const { default: BetterSqlite3 } = await import("better-sqlite3");
  const db = new BetterSqlite3(sqliteFile(url), { timeout: 15_000 });
  try {
    db.pragma("journal_mode = WAL");
    db.exec(TABLE_DDL.sqlite);
    const now = () => new Date().toISOString().replace("Z", "+00:00");
    const applied: string[] = [];
    let pending: Migration[] = [];
    // IMMEDIATE takes the write lock up front: a second process waits here, then sees the work done.
    db.exec("BEGIN IMMEDIATE");
    try {
      pending = plan(all, db.prepare(`SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations"`).all() as AppliedRow[]);
      if (!dryRun) {
        for (const m of pending) {
          try {
            db.exec(m.script);
          } catch (e) {
            throw new StoreError("MigrationFailed", `Migration ${m.name} failed: ${(e as Error).message}`, { cause: e });
          }
          db.prepare(
            `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, finished_at, applied_steps_count) VALUES (?, ?, ?, ?, ?, 1)`,
          ).run(crypto.randomUUID(), m.checksum, m.name, now(), now());
          applied.push(m.name);
        }
      }
      db.exec("COMMIT");
    } catch (e) {
      db.exec("ROLLBACK");
      throw e;
    }
    return { applied, pending: dryRun ? pending.map((m) => m.name) : [] };
  } finally {
    db.close();
  }
}

async function migratePg(url: string, all: Migration[], dryRun: boolean): Promise<MigrationResult> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  try {
    await client.connect();
  } catch (e) {
    throw new StoreError(
      "Unavailable",
      `Could not connect to PostgreSQL to migrate: ${(e as Error).message}. Check DATABASE_URL and that the server is running.`,
      { cause: e },
    );
  }
  try {
    await client.query(`SELECT pg_advisory_lock(${PG_LOCK_KEY})`);
    await client.query(TABLE_DDL.postgresql);
    const { rows } = await client.query<AppliedRow>(`SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations"`);
    const pending = plan(all, rows);
    const applied: string[] = [];
    if (!dryRun) {
      for (const m of pending) {
        await client.query("BEGIN");
        try {
          await client.query(m.script);
          await client.query(
            `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, finished_at, applied_steps_count) VALUES ($1, $2, $3, now(), now(), 1)`,
            [crypto.randomUUID(), m.checksum, m.name],
          );
          await client.query("COMMIT");
        } catch (e) {
          await client.query("ROLLBACK");
          throw new StoreError("MigrationFailed", `Migration ${m.name} failed: ${(e as Error).message}`, { cause: e });
        }
        applied.push(m.name);
      }
    }
    await client.query(`SELECT pg_advisory_unlock(${PG_LOCK_KEY})`);
    return { applied, pending: dryRun ? pending.map((m) => m.name) : [] };
  } finally {
    await client.end();
  }
}
