import type { Config } from "../../config.js";
import { errInfo, type Logger } from "../../log.js";
import { Registry } from "../../session/registry.js";
import {
  AccessStore,
  DeliveryStore,
  IdentityStore,
  InboundStore,
  KvStore,
  MemoryStore,
  openDatabase,
  SessionStore,
  TranscriptStore,
  TurnStore,
  type Database,
  type DatabaseOptions,
  type StoreFaults,
} from "../../store/index.js";
import { GatewayLedger } from "../ledger.js";
import type { GatewayMetrics } from "../metrics.js";
import { Retention } from "../retention.js";
import type { AppBase, StorePart } from "./parts.js";

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

/** The database and every store over it, with the gateway's ledger and the retention sweep. */
export async function storePart(base: Pick<AppBase, "config" | "opts" | "log" | "metrics">): Promise<StorePart> {
  const { config, opts, log, metrics } = base;
  const db = await openGatewayDatabase(config, opts, log, metrics);
  const deliveries = new DeliveryStore(db);
  const inbound = new InboundStore(db, opts.clock);
  return {
    db,
    registry: new Registry(new SessionStore(db)),
    transcript: new TranscriptStore(db),
    memories: new MemoryStore(db, { cache: !config.SHARED_DATABASE }),
    kv: new KvStore(db),
    identities: new IdentityStore(db),
    access: new AccessStore(db),
    deliveries,
    inbound,
    ledger: new GatewayLedger(new TurnStore(db, deliveries), config.INBOUND_TTL),
    retention: new Retention({ retentionMs: config.RECORD_RETENTION, tables: { inbound, delivery: deliveries }, log, metrics }),
  };
}
