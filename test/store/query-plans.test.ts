/**
 * Every statement a conversation's messages issue on SQLite reaches its rows
 * through a seek: none walks a table or an index from its first entry, so a
 * message costs the same with a million rows recorded as with ten. (Without an
 * index led by "seq", the next-sequence subquery of each recorded event walked
 * all of InboundEvent_status_seq_idx: recording slowed from 17 µs to 1.2 ms
 * in 30,000 messages.) EXPLAIN QUERY PLAN called that walk a "SEARCH ... USING
 * COVERING INDEX", so the test reads the bytecode: a Rewind on a table's or an
 * index's cursor is a walk from the first entry. The statements are the real
 * ones, captured through createApp's onQuery while DMs, a group, /new and
 * /status run.
 */
import Sqlite from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { sqliteFile } from "../../src/store/db.js";
import { startAppOn } from "../support/app-on.js";
import { eventually } from "../support/app.js";
import { freshMigratedSqliteUrl } from "../support/db.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import type { App } from "../../src/gateway/app.js";

const TX_CONTROL = /^(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b/i;

interface Op {
  addr: number;
  opcode: string;
  p1: number;
  p2: number;
}

/** The tables and indexes a statement walks from their first entry (cursors on the database file, not temporary ones). */
function walks(db: Sqlite.Database, sql: string, params: unknown[], names: Map<number, string>): string[] {
  const ops = db.prepare(`EXPLAIN ${sql}`).all(...params.map(sqliteValue)) as Op[];
  const opened = new Map<number, number>();
  for (const op of ops) if (op.opcode === "OpenRead" || op.opcode === "OpenWrite") opened.set(op.p1, op.p2);
  return ops.filter((op) => op.opcode === "Rewind" && opened.has(op.p1)).map((op) => names.get(opened.get(op.p1)!) ?? `root page ${opened.get(op.p1)}`);
}

let app: App | undefined;
afterEach(async () => {
  await app?.stop();
  app = undefined;
});

const sqliteValue = (v: unknown) => (typeof v === "boolean" ? (v ? 1 : 0) : (v ?? null));

describe("query plans of a conversation's statements (SQLite)", () => {
  it("reach every table through an index, with no table scanned", async () => {
    const url = await freshMigratedSqliteUrl();
    const statements = new Map<string, unknown[]>();
    const a = new MemoryAdapter();
    ({ app } = await startAppOn(url, [a], {}, { onQuery: (e) => statements.set(e.query, JSON.parse(e.params) as unknown[]) }));
    const turns: Array<[ReturnType<MemoryAdapter["dm"]>, string]> = [];
    for (const user of ["u1", "u2"]) for (const text of ["hello", "again", "/new", "after", "/status"]) turns.push([a.dm(user, text), user]);
    for (const sender of ["s1", "s2"]) turns.push([a.group("-100", sender, "in the group", { mentioned: true }), "-100"]);
    for (const [envelope, chat] of turns) {
      const before = a.to(chat).length;
      await a.ctx.inbound(envelope);
      await eventually(
        () => a.to(chat).length,
        (n) => n > before,
        10_000,
        `a reply in ${chat}`,
      );
    }
    await app.stop();
    app = undefined;

    const hot = [...statements].filter(([sql]) => !TX_CONTROL.test(sql));
    expect(hot.length).toBeGreaterThan(10);
    expect(hot.some(([sql]) => /insert into "InboundEvent"/i.test(sql))).toBe(true);
    const db = new Sqlite(sqliteFile(url), { readonly: true });
    try {
      const names = new Map(
        (db.prepare(`SELECT rootpage, name FROM sqlite_schema WHERE rootpage > 0`).all() as Array<{ rootpage: number; name: string }>).map((r) => [
          r.rootpage,
          r.name,
        ]),
      );
      expect(walks(db, `SELECT "id" FROM "InboundEvent" WHERE "note" = ?`, ["x"], names)).toEqual([expect.stringMatching(/InboundEvent/)]);
      const found = hot.flatMap(([sql, params]) => walks(db, sql, params, names).map((what) => `walks ${what}: ${sql.slice(0, 140)}`));
      expect(found).toEqual([]);
    } finally {
      db.close();
    }
  });
});
