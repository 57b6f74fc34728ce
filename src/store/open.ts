import { providerOf, type Database, type DatabaseOptions } from "./db.js";
import { migrate } from "./migrate.js";
import { PostgresDatabase } from "./postgres/database.js";
import { SqliteDatabase } from "./sqlite/database.js";

/**
 * Opens the database of the URL's back end (file: SQLite, postgresql://
 * PostgreSQL), applying pending migrations first unless told not to, and
 * checks it answers.
 */
export async function openDatabase(opts: DatabaseOptions & { migrate?: boolean }): Promise<Database> {
  if (opts.migrate !== false) await migrate(opts.url);
  const db = providerOf(opts.url) === "sqlite" ? new SqliteDatabase(opts) : new PostgresDatabase(opts);
  try {
    await db.init();
  } catch (e) {
    await db.close();
    throw e;
  }
  return db;
}
