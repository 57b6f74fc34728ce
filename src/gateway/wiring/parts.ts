import type { Config } from "../../config.js";
import type { Logger } from "../../log.js";
import type { Registry } from "../../session/registry.js";
import type { AccessStore, Database, DeliveryStore, IdentityStore, InboundStore, KvStore, MemoryStore, TranscriptStore } from "../../store/index.js";
import type { AppOptions } from "../app.js";
import type { AdapterRegistry } from "../adapters.js";
import type { GatewayLedger } from "../ledger.js";
import type { GatewayMetrics } from "../metrics.js";
import type { Retention } from "../retention.js";

/** What every part is built from: the configuration, the options, the logger and metrics, the adapters and this process's id. */
export interface AppBase {
  config: Config;
  opts: AppOptions;
  log: Logger;
  metrics: GatewayMetrics;
  adapters: AdapterRegistry;
  /** Names this process as the owner of claims, leases and approvals. */
  processId: string;
}

/** The database and the stores over it (wiring/store.ts storePart). */
export interface StorePart {
  db: Database;
  registry: Registry;
  transcript: TranscriptStore;
  memories: MemoryStore;
  kv: KvStore;
  identities: IdentityStore;
  access: AccessStore;
  deliveries: DeliveryStore;
  inbound: InboundStore;
  ledger: GatewayLedger;
  retention: Retention;
}
