/**
 * The gateway's SQLite WAL is checkpointed on a worker thread
 * (src/store/sqlite/checkpointer.ts): the WAL is copied into the database and started
 * again from the top while writes go on (how large it grows under load is the
 * bench's to show: it depends on how fast the worker runs), nothing written is lost, the
 * writing connection still closes last (its close removes the WAL), and a
 * worker that cannot run is reported while the writes still succeed.
 */
import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { KvStore, openDatabase } from "../../src/store/index.js";
import { Checkpointer } from "../../src/store/sqlite/checkpointer.js";
import { sqliteFile } from "../../src/store/db.js";
import { eventually } from "../support/app.js";
import { freshMigratedSqliteUrl, sqliteOf } from "../support/db.js";

describe("WAL checkpoints on a worker thread (SQLite)", () => {
  it("copies the WAL and restarts it while writes go on, loses nothing, and leaves no WAL after close", async () => {
    const url = await freshMigratedSqliteUrl();
    const file = sqliteFile(url);
    const errors: Error[] = [];
    const db = sqliteOf(await openDatabase({ url, checkpointWorker: { onError: (e) => errors.push(e), everyCommits: 8, restartAtFrames: 64 } }));
    // At least 3,000 writes, and on until a round has restarted the WAL (a busy machine slows the
    // worker, never stops it).
    const kv = new KvStore(db);
    let n = 0;
    while ((n < 3000 || db.checkpointStats!.restarts === 0) && n < 50_000) await kv.set(`k${n++}`, "x".repeat(200));
    expect(db.checkpointStats!.restarts).toBeGreaterThan(0);
    expect(db.checkpointStats!.checkpoints).toBeGreaterThan(1);
    await db.close();
    expect(errors).toEqual([]);
    // The checkpointer's connection closed first, so the writer's close checkpointed everything and removed the WAL.
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    const again = await openDatabase({ url });
    try {
      const kv = new KvStore(again);
      expect(await kv.get("k0")).toBe("x".repeat(200));
      expect(await kv.get(`k${n - 1}`)).toBe("x".repeat(200));
      const [{ rows }] = (await again.query(
        "count",
        again.q.selectFrom("AdapterState").select((eb) => eb.fn.countAll<number>().as("rows")),
      )) as [{ rows: number }];
      expect(Number(rows)).toBe(n);
    } finally {
      await again.close();
    }
  });

  it("reports a worker that cannot start once, and asks it nothing more", async () => {
    const url = await freshMigratedSqliteUrl();
    const errors: Error[] = [];
    const c = new Checkpointer({
      file: sqliteFile(url),
      driver: "/nonexistent/better-sqlite3",
      busyTimeoutMs: 1000,
      everyCommits: 1,
      restartAtFrames: 1,
      exclusive: (fn) => fn(),
      onError: (e) => errors.push(e),
    });
    c.committed();
    await eventually(
      () => errors.length,
      (n) => n > 0,
      30_000,
      "the worker's failure reported",
    );
    for (let i = 0; i < 5; i++) c.committed();
    await c.stop();
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).toMatch(/Cannot find module '\/nonexistent\/better-sqlite3'.*checkpoints run on the writing connection from now on/s);
    expect(c.stats.checkpoints).toBe(0);
  });
});
