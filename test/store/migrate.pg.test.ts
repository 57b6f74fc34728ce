import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { listMigrations, migrate, MIGRATIONS_ROOT } from "../../src/store/migrate.js";
import { PROVIDERS, freshDatabaseUrl } from "../support/db.js";

async function rows(url: string): Promise<Array<{ migration_name: string; checksum: string; finished: boolean; steps: number }>> {
  if (url.startsWith("file:")) {
    const { default: Db } = await import("better-sqlite3");
    const db = new Db(url.slice(5));
    try {
      return (
        db
          .prepare(
            `SELECT migration_name, checksum, finished_at IS NOT NULL AS finished, applied_steps_count AS steps FROM _prisma_migrations ORDER BY migration_name`,
          )
          .all() as Array<{ migration_name: string; checksum: string; finished: number; steps: number }>
      ).map((r) => ({ ...r, finished: !!r.finished }));
    } finally {
      db.close();
    }
  }
  const { default: pg } = await import("pg");
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (
      await c.query(
        `SELECT migration_name, checksum, finished_at IS NOT NULL AS finished, applied_steps_count AS steps FROM _prisma_migrations ORDER BY migration_name`,
      )
    ).rows;
  } finally {
    await c.end();
  }
}

describe.each(PROVIDERS)("migrations on %s", (provider) => {
  it("apply once, recorded in _prisma_migrations the way Prisma Migrate records them", async () => {
    const url = await freshDatabaseUrl(provider);
    const all = listMigrations(provider);
    expect(all.length).toBeGreaterThan(0);
    const first = await migrate(url);
    expect(first.applied).toEqual(all.map((m) => m.name));
    const again = await migrate(url);
    expect(again.applied).toEqual([]);
    const recorded = await rows(url);
    expect(recorded.map((r) => r.migration_name)).toEqual(all.map((m) => m.name));
    for (const r of recorded) {
      const file = fs.readFileSync(path.join(MIGRATIONS_ROOT, provider, "migrations", r.migration_name, "migration.sql"));
      expect(r.checksum).toBe(crypto.createHash("sha256").update(file).digest("hex"));
      expect(r.finished).toBe(true);
      expect(Number(r.steps)).toBe(1);
    }
  });

  it("concurrent migrators apply each migration exactly once", async () => {
    const url = await freshDatabaseUrl(provider);
    const results = await Promise.all([migrate(url), migrate(url), migrate(url)]);
    expect(results.flatMap((r) => r.applied).sort()).toEqual(
      listMigrations(provider)
        .map((m) => m.name)
        .sort(),
    );
    expect((await rows(url)).length).toBe(listMigrations(provider).length);
  });

  it("the two providers have the same migration history", () => {
    expect(listMigrations("sqlite").map((m) => m.name)).toEqual(listMigrations("postgresql").map((m) => m.name));
  });
});
