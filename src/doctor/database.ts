import { randomUUID } from "node:crypto";
import type { Config } from "../config.js";
import { describeDatabase } from "../log.js";
import { withExistingDatabase } from "../cli/database.js";
import { listMigrations, migrate } from "../store/migrate.js";
import { providerOf } from "../store/db.js";
import { fail, pass, type CheckResult } from "./check.js";

/** The database: it exists, its migrations are applied, and a write lands and is removed again. */
export async function checkDatabase(config: Config): Promise<CheckResult[]> {
  const where = describeDatabase(config.DATABASE_URL);
  try {
    return await withExistingDatabase(config, async (db) => {
      const key = `doctor:probe:${randomUUID()}`;
      const t0 = performance.now();
      await db.exec("doctor-probe", db.q.insertInto("AdapterState").values({ key, value: "probe", updatedAt: new Date() }));
      const [row] = await db.query("doctor-probe-read", db.q.selectFrom("AdapterState").select("value").where("key", "=", key));
      await db.exec("doctor-probe-delete", db.q.deleteFrom("AdapterState").where("key", "=", key));
      if (row?.value !== "probe")
        return [
          fail(
            "database",
            "Database",
            `a probe row written to ${where} could not be read back.`,
            "Check the database server's health and that DATABASE_URL's user may write.",
          ),
        ];
      const ms = Math.round(performance.now() - t0);
      const r = await migrate(config.DATABASE_URL, { dryRun: true });
      const all = listMigrations(providerOf(config.DATABASE_URL)).length;
      if (r.pending.length)
        return [
          fail(
            "database",
            "Database",
            `${where} is writable, but ${r.pending.length} of ${all} migrations are pending (${r.pending.join(", ")}).`,
            "Run `switchboard migrate` (serve also applies them at start).",
          ),
        ];
      return [pass("database", "Database", `${where}: a probe write, read and delete took ${ms} ms; all ${all} migrations applied.`)];
    });
  } catch (e) {
    const err = e as { code?: string; message?: string };
    const fix =
      err.code === "NoDatabase"
        ? "Start the gateway once (npm start) or run `switchboard migrate`; check DATABASE_URL and the folder you run from."
        : "Check DATABASE_URL (host, port, user, password, database name) and that the server is up and lets this user write.";
    return [fail("database", "Database", `${where}: ${err.message ?? String(e)}`, fix)];
  }
}
