export { providerOf, type Database, type Provider, type StoreFaults, type DatabaseOptions } from "./db.js";
export { openDatabase } from "./open.js";
export { StoreError, type StoreErrorCode } from "./errors.js";
export { migrate, listMigrations, type MigrationResult } from "./migrate.js";
export { SessionStore, type SessionRecord, type BindingRecord } from "./sessions.js";
export { IdentityStore, type UserRecord, type GroupRecord } from "./identities.js";
export { TranscriptStore, type MessageRecord, type NewMessage } from "./transcript.js";
export { AccessStore, type PairingRecord } from "./access.js";
export { MemoryStore, type MemoryRecord } from "./memories.js";
export { KvStore } from "./kv.js";
export { InboundStore, type InboundRecord, type InboundStatus } from "./inbound.js";
export { DeliveryStore, type DeliveryRecord, type DeliveryStatus } from "./deliveries.js";
export { TurnStore, type TurnCommit } from "./turns.js";
export { LeaseStore } from "./leases.js";
export { RateBudgetStore, type BudgetLease, type BudgetLimit } from "./rate-budgets.js";
export { ApprovalStore, type ApprovalRecord, type ApprovalStatus, type NewApproval } from "./approvals.js";
export {
  SlackInstallationStore,
  SlackOAuthStateStore,
  type SlackInstallationRecord,
  type SlackInstallationSummary,
  type SlackInstallationKey,
  type NewSlackInstallation,
} from "./slack-installations.js";
export { purgeSlackWorkspace, type SlackWorkspaceRef, type WorkspacePurgeCounts } from "./workspace-purge.js";
export { UsageStore, USAGE_GROUPS, type UsageRecord, type NewUsage, type UsageGroup, type UsageTotals, type UsageFilter } from "./usage.js";
export { BudgetStore, type BudgetClaim, type BudgetCounterRecord, type Settlement } from "./budgets.js";
