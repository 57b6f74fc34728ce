/**
 * The MCP tool servers, through the official SDK client (stdio children and
 * Streamable HTTP). Each server's tools are offered as `<server>__<tool>`.
 * A server that fails to start, crashes or stops answering is restarted with
 * backoff and its status is visible (a log line, /healthz, `/tools`); its
 * tools stay listed meanwhile and a call to one returns an error result, so a
 * tool is never silently missing. One server's run is server.ts; its
 * transport, transport.ts.
 */
import type { Tool } from "../tools.js";
import { resolvePolicy, type PolicyChat, type ToolPolicy } from "../tool-policy.js";
import { noopLog, type AgentLog } from "../types.js";
import { TOOL_SEPARATOR, type ServerStatus } from "../tool-source.js";
import type { ListedTool } from "./bounds.js";
import type { McpConfig } from "./config.js";
import { McpServerHandle, validToolName, type McpHubOptions } from "./server.js";
import { DEFAULT_STDERR_LIMITS } from "./stderr-log.js";

export { resultText } from "./result.js";
export type { McpHubOptions } from "./server.js";
export type McpToolInfo = ListedTool;

export class McpHub {
  readonly #servers: McpServerHandle[];
  readonly #log: AgentLog;
  readonly #callTimeoutMs: number;

  constructor(
    readonly config: McpConfig,
    opts: McpHubOptions = {},
  ) {
    this.#log = opts.log ?? noopLog;
    this.#callTimeoutMs = opts.callTimeoutMs ?? 30_000;
    const o = {
      log: this.#log,
      startTimeoutMs: opts.startTimeoutMs ?? 20_000,
      backoffMs: opts.backoffMs ?? { first: 1_000, max: 60_000 },
      callTimeoutMs: this.#callTimeoutMs,
      stderrLines: opts.stderrLines ?? DEFAULT_STDERR_LIMITS,
    };
    this.#servers = config.servers.map((s) => new McpServerHandle(s, o));
  }

  /**
   * Connects every server; resolves once each has succeeded or failed its
   * first attempt (failures restart in the background), or after `waitMs`
   * (MCP_START_TIMEOUT): a slow server then goes on starting in the
   * background, "starting" in its status, and its tools appear once it is
   * ready. Resolves with the names of the servers still starting.
   */
  async start(opts: { waitMs?: number } = {}): Promise<string[]> {
    const all = Promise.allSettled(this.#servers.map((s) => s.start()));
    if (opts.waitMs === undefined) await all;
    else {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([all, new Promise<void>((r) => (timer = setTimeout(r, opts.waitMs)))]);
      clearTimeout(timer);
    }
    const starting = this.#servers.filter((s) => s.state === "starting").map((s) => s.config.name);
    if (starting.length)
      this.#log.warn(
        { servers: starting, waitedMs: opts.waitMs },
        "mcp servers still starting: the gateway goes on without them (MCP_START_TIMEOUT); their tools appear once they are ready, /healthz shows them starting",
      );
    return starting;
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.#servers.map((s) => s.stop()));
  }

  status(): ServerStatus[] {
    return this.#servers.map((s) => s.status());
  }

  /** Every server's tools as the agent's tools; a server that never listed any has none yet (its status says why). */
  tools(): Tool[] {
    const out: Tool[] = [];
    const seen = new Set<string>();
    for (const s of this.#servers) {
      for (const t of s.tools) {
        const name = `${s.config.name}${TOOL_SEPARATOR}${t.name}`;
        if (!validToolName(s.config.name, t.name)) {
          this.#log.warn({ server: s.config.name, tool: t.name }, "mcp tool skipped: its namespaced name is not 1-64 letters, digits, _ or -");
          continue;
        }
        // A server that lists one name twice keeps the first: a second would make every turn's registry refuse them all.
        if (seen.has(name)) {
          this.#log.warn({ server: s.config.name, tool: t.name }, "mcp tool skipped: the server lists this name more than once (the first is kept)");
          continue;
        }
        seen.add(name);
        const timeoutMs = s.config.timeoutMs ?? this.#callTimeoutMs;
        out.push({
          name,
          server: s.config.name,
          description: t.description || `${t.name} (MCP server ${s.config.name})`,
          parameters: t.inputSchema,
          timeoutMs,
          run: (args, ctx) => s.call(t.name, args, ctx.signal, timeoutMs),
        });
      }
    }
    return out;
  }

  /** The policy of a namespaced tool in a chat, or undefined when it is not an MCP tool. */
  policyOf(toolName: string, chat: PolicyChat): ToolPolicy | undefined {
    const i = toolName.indexOf(TOOL_SEPARATOR);
    if (i < 0) return undefined;
    const s = this.#servers.find((x) => x.config.name === toolName.slice(0, i));
    if (!s) return undefined;
    const tool = toolName.slice(i + TOOL_SEPARATOR.length);
    // Own keys only: a tool the server names `constructor` or `__proto__` must not find an inherited member as its rule.
    const rule = Object.hasOwn(s.config.tools, tool) ? s.config.tools[tool] : undefined;
    return resolvePolicy({ ...(rule && { tool: rule }), ...(s.config.rule && { server: s.config.rule }) }, chat);
  }
}
