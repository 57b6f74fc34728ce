import type { Config } from "../../config.js";
import { errInfo, type Logger } from "../../log.js";
import { openDatabase, type Database, type DatabaseOptions, type StoreFaults } from "../../store/index.js";
import type { GatewayMetrics } from "../metrics.js";

/** The driver's error code behind a store failure (SQLITE_FULL, ECONNRESET, ...), for the failure counter's label. */
function storeErrorCode(err: unknown): string {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | undefined;
  const inner = e?.cause?.code;
  return typeof inner === "string" ? inner : typeof e?.code === "string" ? e.code : "unknown";
}

/** The gateway's database, with its failures counted and its fencing (a database that is not the one opened) logged. */
export function openGatewayDatabase(
  config: Pick<Config, "DATABASE_URL">,
  opts: { faults?: StoreFaults; onQuery?: DatabaseOptions["onQuery"] },
  log: Logger,
  metrics: GatewayMetrics,
): Promise<Database> {
  return openDatabase({
    url: config.DATABASE_URL,
    faults: opts.faults,
    onQuery: opts.onQuery,
    onIdleError: (err) => log.warn({ err: errInfo(err) }, "an idle PostgreSQL connection dropped; the next query reconnects"),
    // Each store call that failed for good is counted; the caller logs it with its own context.
    onFailure: (op, err) => metrics.storeFailures.inc({ op, code: storeErrorCode(err) }),
    checkpointWorker: {
      onError: (err) => {
        metrics.storeFailures.inc({ op: "wal-checkpoint", code: storeErrorCode(err) });
        log.warn({ err: errInfo(err) }, "a SQLite WAL checkpoint failed; the WAL keeps every commit and the next checkpoint tries again");
      },
    },
    onFenced: (reason) => {
      metrics.internalErrors.inc({ where: "store-identity" });
      log.error({ reason }, "the database is not the one this gateway opened: intake stops (nothing more is acknowledged) and /healthz answers 503");
    },
  });
}
