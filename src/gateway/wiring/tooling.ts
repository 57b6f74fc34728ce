import type { Config } from "../../config.js";
import type { Logger } from "../../log.js";
import type { McpConfig } from "../../agent/mcp/index.js";
import { ApprovalStore, type Database, type KvStore } from "../../store/index.js";
import type { GatewayMetrics } from "../metrics.js";
import { Tooling, type ToolingOptions } from "../tooling.js";

/** The tools, MCP servers and approvals as the configuration sets them (MCP_CONFIG, APPROVERS, the timeouts). */
export function configuredTooling(
  config: Config,
  deps: {
    db: Database;
    kv: KvStore;
    /** MCP servers and policies given directly instead of MCP_CONFIG's file (tests). */
    mcpConfig?: McpConfig;
    processId: string;
    log: Logger;
    metrics: GatewayMetrics;
    outbound: ToolingOptions["outbound"];
    /** Whether a sender passes the DM policy (inbound/access.ts passesDmPolicy), asked when someone decides a tool call. */
    mayApprove: ToolingOptions["mayApprove"];
  },
): Tooling {
  return new Tooling({
    ...(config.MCP_CONFIG && { mcpConfigPath: config.MCP_CONFIG }),
    ...(deps.mcpConfig && { mcpConfig: deps.mcpConfig }),
    approvers: config.APPROVERS,
    approvalTimeoutMs: config.APPROVAL_TIMEOUT,
    toolTimeoutMs: config.TOOL_TIMEOUT,
    store: new ApprovalStore(deps.db),
    kv: deps.kv,
    owner: deps.processId,
    shared: config.SHARED_DATABASE,
    log: deps.log,
    outbound: deps.outbound,
    mayApprove: deps.mayApprove,
    onDecision: (status) => deps.metrics.approvals.inc({ outcome: status }),
  });
}
