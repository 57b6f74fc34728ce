import fs from "node:fs";
import { tempSqliteUrl } from "../../test/support/temp-sqlite.js";
import { startPgCluster, type PgCluster } from "../../tools/pg-cluster.js";

const dirs: string[] = [];
let cluster: PgCluster | undefined;

/** A fresh SQLite file URL in a temp folder (removed by cleanupDatabases). */
export function freshSqliteUrl(): string {
  return tempSqliteUrl("switchboard-bench-", "bench.db", dirs);
}

/** A fresh database on a throwaway PostgreSQL cluster, started once per bench run. */
export async function freshPgUrl(): Promise<string> {
  cluster ??= await startPgCluster();
  return cluster.createDatabase();
}

export async function freshUrl(provider: "sqlite" | "postgres"): Promise<string> {
  return provider === "sqlite" ? freshSqliteUrl() : freshPgUrl();
}

export function cleanupDatabases(): void {
  cluster?.stop();
  cluster = undefined;
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
}
