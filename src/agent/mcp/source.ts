import type { PolicyChat, ToolPolicy } from "../tool-policy.js";
import type { Tool } from "../tools.js";
import type { AgentLog } from "../types.js";
import type { ServerStatus, ToolSource } from "../tool-source.js";
import type { McpConfig } from "./config.js";
import type { McpHub } from "./hub.js";

/**
 * The MCP servers as a tool source. The hub, and with it the MCP SDK, is
 * loaded at start() and only when servers are configured; until then the
 * source offers no tools and decides no policy.
 */
export class McpToolSource implements ToolSource {
  #hub: McpHub | undefined;

  constructor(
    readonly config: McpConfig,
    readonly opts: { log: AgentLog; callTimeoutMs: number },
  ) {}

  async start(opts: { waitMs?: number } = {}): Promise<void> {
    if (!this.config.servers.length || this.#hub) return;
    const { McpHub } = await import("./hub.js");
    // Each attempt may take at least as long as the start waits: a server that needs 15 s is slow, not broken.
    const startTimeoutMs = Math.max(20_000, opts.waitMs ?? 0);
    this.#hub = new McpHub(this.config, { log: this.opts.log, callTimeoutMs: this.opts.callTimeoutMs, startTimeoutMs });
    await this.#hub.start(opts);
  }

  async stop(): Promise<void> {
    await this.#hub?.stop();
  }

  tools(): readonly Tool[] {
    return this.#hub?.tools() ?? [];
  }

  /** An MCP tool's policy from its server's and tool's rules; undefined for a name that is no server's tool. */
  policyOf(name: string, chat: PolicyChat): ToolPolicy | undefined {
    return this.#hub?.policyOf(name, chat);
  }

  status(): readonly ServerStatus[] {
    return this.#hub?.status() ?? [];
  }
}
