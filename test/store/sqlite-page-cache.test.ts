import { CompiledQuery } from "kysely";
import { describe, expect, it } from "vitest";
import { sqliteFile } from "../../src/store/db.js";
import { SqliteSql } from "../../src/store/sqlite/sql.js";
import { freshMigratedSqliteUrl } from "../support/db.js";

const pragma = (name: string) => ({ compile: () => CompiledQuery.raw(`PRAGMA ${name}`) });

describe("the SQLite connection's page cache", () => {
  // It is part of the gateway's RSS at scale (README, "Performance"): 16 MB of it was most of
  // malloc's growth at 10,000 live chats. A connection that loses the setting gets SQLite's 2 MB,
  // one that is given more grows RSS again; either fails here.
  it("is bounded at 4 MB (cache_size in KiB, negative) on a real file", async () => {
    const sql = new SqliteSql(sqliteFile(await freshMigratedSqliteUrl()), 1000);
    try {
      expect(sql.allSync<{ cache_size: number }>(pragma("cache_size"))).toEqual([{ cache_size: -4096 }]);
      // The durability settings it sits beside are unchanged.
      expect(sql.allSync<{ journal_mode: string }>(pragma("journal_mode"))).toEqual([{ journal_mode: "wal" }]);
      expect(sql.allSync<{ synchronous: number }>(pragma("synchronous"))).toEqual([{ synchronous: 1 }]);
    } finally {
      sql.close();
    }
  });
});
