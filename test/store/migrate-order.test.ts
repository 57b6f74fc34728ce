import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, it } from "vitest";
import { listMigrations } from "../../src/store/migrate.js";

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) fs.rmSync(r, { recursive: true, force: true });
});

it("lists migration folders by code unit, as Prisma Migrate orders them, not by the locale's collation", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-migrate-order-"));
  roots.push(root);
  // A locale's collation puts "a" before "B" and ignores "_" against "-"; by code unit "B" (66) < "_" (95) < "a" (97).
  const names = ["20250101000000_b", "20250101000000_B", "20250101000000-a", "20250101000000_a", "20241231000000_z"];
  for (const n of names) {
    fs.mkdirSync(path.join(root, "sqlite", "migrations", n), { recursive: true });
    fs.writeFileSync(path.join(root, "sqlite", "migrations", n, "migration.sql"), `-- ${n}\n`);
  }
  fs.writeFileSync(path.join(root, "sqlite", "migrations", "migration_lock.toml"), 'provider = "sqlite"\n');
  expect(listMigrations("sqlite", root).map((m) => m.name)).toEqual([
    "20241231000000_z",
    "20250101000000-a",
    "20250101000000_B",
    "20250101000000_a",
    "20250101000000_b",
  ]);
});
