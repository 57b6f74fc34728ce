/**
 * What one agent of AGENTS_CONFIG may use of the gateway's tools (issue 29):
 * its `mcpServers` limit which MCP servers' tools it is offered, and its
 * `tools` patterns set a policy per tool name (`"docs__*": "auto", "*":
 * "deny"`), the first pattern that matches in the file's order. A tool whose
 * policy is `deny` is not offered at all: the model never sees what it could
 * not run. A tool no pattern names keeps the gateway's policy (MCP_CONFIG,
 * the tool's own default).
 */
import { TOOL_SEPARATOR } from "./tool-source.js";
import type { ToolPolicy } from "./tool-policy.js";
import type { Tool, ToolRegistry } from "./tools.js";
import { toolRegistry } from "./tools.js";

export interface AgentToolRules {
  /** The agent's policy for a tool, when one of its patterns names it. */
  policyOf(name: string): ToolPolicy | undefined;
  /** Whether the agent is offered the tool at all. */
  offers(tool: Pick<Tool, "name" | "server">): boolean;
  /** Whether the agent may use the MCP server's tools (its `mcpServers`; all without the list). */
  usesServer(name: string): boolean;
  /** The registry narrowed to what the agent is offered. */
  narrow(tools: ToolRegistry): ToolRegistry;
}

/** `*` matches any run of characters (none included); everything else is literal. */
export function globToRegExp(pattern: string): RegExp {
  const body = pattern
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${body}$`);
}

export function agentToolRules(spec: { tools?: Readonly<Record<string, ToolPolicy>>; mcpServers?: readonly string[] }): AgentToolRules {
  const patterns = Object.entries(spec.tools ?? {}).map(([pattern, policy]) => ({ re: globToRegExp(pattern), policy }));
  const servers = spec.mcpServers ? new Set(spec.mcpServers) : undefined;
  const policyOf = (name: string) => patterns.find((p) => p.re.test(name))?.policy;
  const serverOf = (tool: Pick<Tool, "name" | "server">) => {
    if (tool.server !== undefined) return tool.server;
    const i = tool.name.indexOf(TOOL_SEPARATOR);
    return i < 0 ? undefined : tool.name.slice(0, i);
  };
  const offers = (tool: Pick<Tool, "name" | "server">) => {
    const server = serverOf(tool);
    if (servers && server !== undefined && !servers.has(server)) return false;
    return policyOf(tool.name) !== "deny";
  };
  const unlimited = patterns.length === 0 && servers === undefined;
  return {
    policyOf,
    offers,
    usesServer: (name) => !servers || servers.has(name),
    narrow: (tools) => (unlimited ? tools : toolRegistry(tools.list().filter(offers))),
  };
}
