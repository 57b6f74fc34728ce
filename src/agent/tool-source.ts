/**
 * Where a turn's tools come from. The built-in tools and the MCP servers are
 * two sources of one shape; the gateway's Tooling asks each in turn for the
 * tools a session is offered, for a tool's policy in a chat, and for the
 * state of the servers behind them, and starts and stops those that run
 * anything.
 */
import type { Info } from "../session/info.js";
import { resolvePolicy, type PolicyChat, type PolicyRule, type ToolPolicy } from "./tool-policy.js";
import type { Tool } from "./tools.js";

/** Between an MCP server's name and its tool's: `<server>__<tool>`. A built-in's name never holds it. */
export const TOOL_SEPARATOR = "__";

export type ServerState = "starting" | "ready" | "restarting" | "stopped";

/** A tool server's state, as /healthz and `/tools` show it. */
export interface ServerStatus {
  name: string;
  transport: "stdio" | "http";
  state: ServerState;
  /** Why it is not ready: the last failure, without secrets (headers and env are never shown). */
  error?: string;
  tools: string[];
  restarts: number;
  nextAttemptAt?: string;
}

export interface ToolSource {
  /** The tools a turn in `session` is offered from this source. */
  tools(session: Info): readonly Tool[];
  /** A tool's policy in a chat when this source decides it (the operator configured one); otherwise undefined. */
  policyOf(name: string, chat: PolicyChat): ToolPolicy | undefined;
  /** The servers behind the tools (none for tools that run in the process). */
  status(): readonly ServerStatus[];
  /** Starts what the tools need, waiting at most `waitMs` (MCP_START_TIMEOUT); a slower part comes up in the background. */
  start?(opts: { waitMs?: number }): Promise<void>;
  stop?(): Promise<void>;
}

/**
 * The built-in tools: `make` builds them for a session (scoped to it: search
 * sees only the asking conversation's sessions), and MCP_CONFIG's
 * `builtinTools` rules override their declared policies. A namespaced name
 * is an MCP server's tool, which these rules never reach.
 */
export function builtinToolSource(make: (session: Info) => readonly Tool[], rules: Readonly<Record<string, PolicyRule>>): ToolSource {
  return {
    tools: make,
    policyOf: (name, chat) => {
      const rule = name.includes(TOOL_SEPARATOR) || !Object.hasOwn(rules, name) ? undefined : rules[name];
      return rule ? resolvePolicy({ tool: rule }, chat) : undefined;
    },
    status: () => [],
  };
}
