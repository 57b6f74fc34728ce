import fs from "node:fs";
import path from "node:path";
import type { Config } from "../config.js";
import type { Database } from "../store/db.js";
import { openDatabase } from "../store/open.js";
import { CliError } from "./output.js";

/**
 * The database for a command that reads or changes data. Unlike `serve` and
 * `migrate`, it never creates one: run from the wrong folder, a relative
 * `file:` URL points at a file that is not there, and an empty database
 * would only hide that. So a missing SQLite file, or one without the schema,
 * is an error naming DATABASE_URL.
 */
export async function withExistingDatabase<T>(config: Config, fn: (db: Database) => Promise<T>): Promise<T> {
  const url = config.DATABASE_URL;
  if (url.startsWith("file:")) {
    const file = url.slice("file:".length).split("?")[0]!;
    const abs = path.resolve(file);
    if (file === ":memory:" || !fs.existsSync(abs)) {
      throw new CliError(
        "NoDatabase",
        `DATABASE_URL=${url} names ${abs}, which does not exist. Run this from the folder the gateway runs in, set DATABASE_URL to the gateway's database, or create it with \`switchboard migrate\`.`,
      );
    }
  }
  const db = await openDatabase({ url, maxRetries: 2, migrate: false });
  try {
    try {
      await db.query("schema-check", db.q.selectFrom("Session").select("id").limit(1));
    } catch (e) {
      const msg = String((e as Error).message ?? e);
      if (/no such table|does not exist/i.test(msg) && /Session/.test(msg)) {
        throw new CliError(
          "NoDatabase",
          `The database at DATABASE_URL has no Switchboard tables yet. Run \`switchboard migrate\` first (or point DATABASE_URL at the gateway's database).`,
        );
      }
      throw e;
    }
    return await fn(db);
  } finally {
    await db.close();
  }
}
