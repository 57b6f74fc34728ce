import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { openDatabase, StoreError } from "../../src/store/index.js";
import { sqliteFile } from "../../src/store/db.js";
import { freshMigratedSqliteUrl, sqliteOf } from "../support/db.js";

describe("openDatabase", () => {
  it("opens the back end the URL names: file: is SQLite", async () => {
    const db = await openDatabase({ url: await freshMigratedSqliteUrl(), migrate: false });
    try {
      expect(db.provider).toBe("sqlite");
      expect(sqliteOf(db).groupStats).toEqual({ commits: 0, units: 0 });
    } finally {
      await db.close();
    }
  });

  it("refuses a URL of no back end, naming the two it knows", async () => {
    const err = await openDatabase({ url: "mysql://localhost/x", migrate: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).message).toMatch(/file: \(SQLite\) or postgresql:\/\/ \(PostgreSQL\)/);
  });

  it("closes what it opened when the database does not answer (nothing is left holding the file)", async () => {
    const url = await freshMigratedSqliteUrl();
    const err = await openDatabase({
      url,
      migrate: false,
      faults: {
        onStatement: (op) => {
          if (op === "init") throw new Error("no answer");
        },
      },
    }).catch((e: unknown) => e);
    expect((err as Error).message).toBe("no answer");
    // A closed SQLite connection, the last on its file, checkpoints and removes the WAL.
    expect(fs.existsSync(`${sqliteFile(url)}-wal`)).toBe(false);
  });
});
