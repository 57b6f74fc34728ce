import type { Config } from "../../config.js";
import type { Logger } from "../../log.js";
import type { McpConfig } from "../../agent/mcp/index.js";
import { ApprovalStore, type Database, type KvStore } from "../../store/index.js";
import type { AdapterRegistry } from "../adapters.js";
import { passesDmPolicy } from "../inbound/access.js";
import type { JobService } from "../jobs/service.js";
import type { GatewayMetrics } from "../metrics.js";
import { Tooling, type CardDoor, type ToolingOptions } from "../tooling.js";
import type { AgentCatalog } from "../../agent/catalog.js";
import type { ModelMeter } from "../../agent/model-meter.js";
import { agentWithTools, sessionBuiltins, type AgentWithTools } from "./agent.js";
import type { AppBase, StorePart } from "./parts.js";
import type { PlacedContext } from "./usage.js";

/** The tools, MCP servers and approvals as the configuration sets them (MCP_CONFIG, APPROVERS, the timeouts). */
export function configuredTooling(
  config: Config,
  deps: {
    db: Database;
    kv: KvStore;
    /** MCP servers and policies given directly instead of MCP_CONFIG's file (tests). */
    mcpConfig?: McpConfig;
    /** The built-in tools of a turn in a session (wiring/agent.ts sessionBuiltins). */
    builtins: ToolingOptions["builtins"];
    processId: string;
    log: Logger;
    metrics: GatewayMetrics;
    adapters: AdapterRegistry;
    outbound: ToolingOptions["outbound"];
    /** Whether a sender passes the DM policy (inbound/access.ts passesDmPolicy), asked when someone decides a tool call. */
    mayApprove: ToolingOptions["mayApprove"];
  },
): Tooling {
  return new Tooling({
    ...(config.MCP_CONFIG && { mcpConfigPath: config.MCP_CONFIG }),
    ...(deps.mcpConfig && { mcpConfig: deps.mcpConfig }),
    builtins: deps.builtins,
    approvers: config.APPROVERS,
    threadsShareChat: config.THREAD_SESSIONS === "parent",
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

/** The tooling part: the tools and approvals, and the turn's agent with them. */
export interface ToolingPart {
  tooling: Tooling;
  withTools: AgentWithTools;
  /** The agents the turns run with (the agent part's), and the routes to them. */
  agents: AgentCatalog;
}

export function toolingPart(
  base: AppBase,
  stores: StorePart,
  deps: { agents: AgentCatalog; jobs: JobService; outbound: CardDoor; meterFor?: (ctx: PlacedContext) => ModelMeter },
): ToolingPart {
  const { config, adapters } = base;
  // Asked only when someone other than an admin decides a tool call, not for every message.
  const mayApprove: ToolingOptions["mayApprove"] = (who) => passesDmPolicy(who, config, stores.access, adapters.get(who.platform, who.botId), false);
  const tooling = configuredTooling(config, {
    ...base,
    ...stores,
    mcpConfig: base.opts.mcpConfig,
    builtins: sessionBuiltins({ ...stores, jobs: deps.jobs }),
    outbound: () => deps.outbound,
    mayApprove,
  });
  return {
    tooling,
    withTools: agentWithTools({ agents: deps.agents, tooling, ...(deps.meterFor && { meterFor: deps.meterFor }) }),
    agents: deps.agents,
  };
}
