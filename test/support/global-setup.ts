import type { TestProject } from "vitest/node";
import "vitest";
import { startPgCluster, type PgCluster } from "../../tools/pg-cluster.js";

declare module "vitest" {
  export interface ProvidedContext {
    pgUrl: string;
  }
}

let cluster: PgCluster | undefined;

/**
 * One PostgreSQL server for the whole run: TEST_DATABASE_URL when given,
 * otherwise a throwaway cluster started here. If neither is possible the run
 * fails with the reason; PostgreSQL tests never skip silently.
 */
export async function setup(project: TestProject): Promise<void> {
  let url = process.env.TEST_DATABASE_URL;
  if (!url) {
    cluster = await startPgCluster();
    url = cluster.url;
  }
  project.provide("pgUrl", url);
}

export async function teardown(): Promise<void> {
  cluster?.stop();
}
