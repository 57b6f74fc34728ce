import { Database, type DatabaseOptions } from "./db.js";
import { migrate } from "./migrate.js";

export { Database, providerOf, type Provider, type StoreFaults, type DatabaseOptions } from "./db.js";
export { StoreError, type StoreErrorCode } from "./errors.js";
export { migrate, listMigrations, type MigrationResult } from "./migrate.js";
export { SessionStore, type SessionRecord, type BindingRecord } from "./sessions.js";
export { IdentityStore, type UserRecord, type GroupRecord } from "./identities.js";

/** Opens the database, applying pending migrations first unless told not to. */
export async function openDatabase(opts: DatabaseOptions & { migrate?: boolean }): Promise<Database> {
  if (opts.migrate !== false) await migrate(opts.url);
  const db = new Database(opts);
  await db.init();
  return db;
}
export { TranscriptStore, type MessageRecord, type NewMessage } from "./transcript.js";
export { AccessStore, type PairingRecord } from "./access.js";
export { MemoryStore, type MemoryRecord } from "./memories.js";
export { KvStore } from "./kv.js";
export { InboundStore, type InboundRecord, type InboundStatus } from "./inbound.js";
export { DeliveryStore, type DeliveryRecord, type DeliveryStatus } from "./deliveries.js";
export { TurnStore, type TurnCommit } from "./turns.js";
export { LeaseStore } from "./leases.js";
export { FaultPlan, faultError, type FaultKind } from "./faults.js";
export { ApprovalStore, type ApprovalRecord, type ApprovalStatus, type NewApproval } from "./approvals.js";
