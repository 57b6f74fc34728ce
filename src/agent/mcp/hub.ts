/**
 * The MCP tool servers, through the official SDK client (stdio children and
 * Streamable HTTP). Each server's tools are offered as `<server>__<tool>`.
 * A server that fails to start, crashes or stops answering is restarted with
 * backoff and its status is visible (a log line, /healthz, `/tools`); its
 * tools stay listed meanwhile and a call to one returns an error result, so a
 * tool is never silently missing.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { tracedFetch } from "../../telemetry/index.js";
import type { Tool } from "../tools.js";
import { resolvePolicy, type PolicyChat, type ToolPolicy } from "../tool-policy.js";
import { noopLog, type AgentLog } from "../types.js";
import { TOOL_SEPARATOR, type ServerState, type ServerStatus } from "../tool-source.js";
import type { McpConfig, McpServerConfig } from "./config.js";
import { AnswerTooLarge, boundedFetch, boundedTools, jsonText, printable } from "./bounds.js";

export interface McpToolInfo {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export interface McpHubOptions {
  log?: AgentLog;
  /** A server must connect and list its tools within this. Default 20 s. */
  startTimeoutMs?: number;
  /** Restart backoff: first delay, doubling to the max. Default 1 s to 60 s. */
  backoffMs?: { first: number; max: number };
  /** Per-call default when the server's config sets none. */
  callTimeoutMs?: number;
}

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** Whether a server's tool can be offered: its namespaced name is 1-64 letters, digits, _ or -. */
const validToolName = (server: string, tool: string): boolean => NAME.test(`${server}${TOOL_SEPARATOR}${tool}`);

class McpServerHandle {
  state: ServerState = "starting";
  error: string | undefined;
  tools: McpToolInfo[] = [];
  restarts = 0;
  nextAttemptAt: Date | undefined;
  #client: Client | undefined;
  #timer: NodeJS.Timeout | undefined;
  #failures = 0;
  #stopped = false;
  #connecting: Promise<void> | undefined;
  /** The client of an attempt still connecting: a stop closes it (and its child) too. */
  #pending: Client | undefined;

  constructor(
    readonly config: McpServerConfig,
    private readonly opts: Required<Omit<McpHubOptions, "log">> & { log: AgentLog },
  ) {}

  start(): Promise<void> {
    this.#connecting ??= this.#connect().finally(() => {
      this.#connecting = undefined;
    });
    return this.#connecting;
  }

  #transport(): Transport {
    const c = this.config;
    if (c.kind === "stdio") {
      // The child's stderr is piped and logged, never mixed into the gateway's own output.
      const t = new StdioClientTransport({
        command: c.command,
        args: c.args,
        env: { ...getDefaultEnvironment(), ...c.env },
        ...(c.cwd && { cwd: c.cwd }),
        stderr: "pipe",
      });
      t.stderr?.on("data", (b: Buffer) => this.opts.log.debug({ server: c.name, stderr: b.toString("utf8").slice(0, 500) }, "mcp server stderr"));
      return t;
    }
    // No silent reconnection of a broken stream: a server that went away is marked down (and its calls fail) at once.
    return new StreamableHTTPClientTransport(new URL(c.url), {
      requestInit: { headers: c.headers ?? {} },
      // Each request carries the active span's traceparent (a tool call's execute_tool span), so a server that traces joins it.
      // Bounded (bounds.ts): an answer is refused past 10 MB, before it is buffered whole.
      fetch: boundedFetch(tracedFetch),
      reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1_000, maxReconnectionDelay: 1_000, reconnectionDelayGrowFactor: 1 },
    });
  }

  async #connect(): Promise<void> {
    if (this.#stopped) return;
    const client = new Client({ name: "switchboard", version: "0.1.0" });
    const transport = this.#transport();
    this.#pending = client;
    try {
      await withTimeout(client.connect(transport, { timeout: this.opts.startTimeoutMs }), this.opts.startTimeoutMs, "did not finish connecting");
      const listed = await client.listTools(undefined, { timeout: this.opts.startTimeoutMs });
      if (this.#stopped) {
        await client.close().catch(() => undefined);
        return;
      }
      this.tools = boundedTools(this.config.name, listed.tools, this.opts.log);
      this.#client = client;
      this.state = "ready";
      this.error = undefined;
      this.#failures = 0;
      this.nextAttemptAt = undefined;
      client.onclose = () => {
        if (this.#client === client) this.#down("the connection closed (the server exited or crashed)");
      };
      // Over HTTP there is no child to watch: a broken stream or a refused request is how a dead server shows.
      if (this.config.kind === "http") {
        client.onerror = (e) => {
          // Judged by the SDK's own words, before any ":" (after it, an error may quote the server's message verbatim).
          if (this.#client === client && /fetch failed|ECONNREFUSED|ECONNRESET|terminated|socket|disconnected|reconnect/i.test(describe(e).split(":")[0]!))
            this.#down(`the connection failed: ${describe(e)}`);
        };
      }
      this.opts.log.info({ server: this.config.name, transport: this.config.kind, tools: this.tools.length }, "mcp server ready");
    } catch (e) {
      await client.close().catch(() => undefined);
      this.#down(`could not start: ${describe(e)}`);
    } finally {
      if (this.#pending === client) this.#pending = undefined;
    }
  }

  /** Marks the server down and schedules the next attempt. */
  #down(why: string): void {
    if (this.#stopped) return;
    const client = this.#client;
    this.#client = undefined;
    if (client) void client.close().catch(() => undefined);
    this.#failures++;
    const delay = Math.min(this.opts.backoffMs.max, this.opts.backoffMs.first * 2 ** (this.#failures - 1));
    this.state = "restarting";
    this.error = why;
    this.nextAttemptAt = new Date(Date.now() + delay);
    this.opts.log.warn(
      { server: this.config.name, transport: this.config.kind, error: why, retryInMs: delay, failures: this.#failures },
      "mcp server down; restarting with backoff",
    );
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.restarts++;
      void this.start();
    }, delay);
    this.#timer.unref?.();
  }

  async call(tool: string, args: unknown, signal: AbortSignal, timeoutMs: number): Promise<string> {
    const client = this.#client;
    if (!client || this.state !== "ready") {
      const when = this.nextAttemptAt ? ` The next restart attempt is at ${this.nextAttemptAt.toISOString()}.` : "";
      throw new Error(`the MCP server "${this.config.name}" is ${this.state}${this.error ? ` (${this.error})` : ""}.${when}`);
    }
    try {
      const r = await client.callTool({ name: tool, arguments: (args ?? {}) as Record<string, unknown> }, undefined, { signal, timeout: timeoutMs });
      return resultText(r as { content?: unknown[]; isError?: boolean; structuredContent?: unknown });
    } catch (e) {
      // An MCP error is the server answering; anything else (closed, refused, reset) means it is gone.
      // Neither is an answer too large for the limit (that call fails, the server stays).
      const answered = e instanceof McpError || e instanceof AnswerTooLarge || (e as { cause?: unknown })?.cause instanceof AnswerTooLarge;
      if (!answered && !signal.aborted && this.#client === client) this.#down(`a call failed: ${describe(e)}`);
      throw e;
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.state = "stopped";
    const c = this.#client;
    this.#client = undefined;
    const pending = this.#pending;
    this.#pending = undefined;
    await Promise.all([c?.close().catch(() => undefined), pending?.close().catch(() => undefined)]);
  }

  status(): ServerStatus {
    return {
      name: this.config.name,
      transport: this.config.kind,
      state: this.state,
      // Only names a turn could offer: a server's name with newlines or controls would forge lines in /tools.
      tools: this.tools.filter((t) => validToolName(this.config.name, t.name)).map((t) => t.name),
      restarts: this.restarts,
      ...(this.error && { error: printable(this.error) }),
      ...(this.nextAttemptAt && this.state !== "ready" && { nextAttemptAt: this.nextAttemptAt.toISOString() }),
    };
  }
}

function describe(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  return m.length > 300 ? `${m.slice(0, 300)}…` : m;
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, reject) => (t = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms)))]).finally(() =>
    clearTimeout(t),
  );
}

/** An MCP result as the text the model reads: text parts joined, other parts named. */
export function resultText(r: { content?: unknown[]; isError?: boolean; structuredContent?: unknown }): string {
  const parts = (r.content ?? []).map((c) => {
    const item = c as { type?: string; text?: string; mimeType?: string; resource?: { uri?: string; text?: string } };
    if (item.type === "text") return item.text ?? "";
    if (item.type === "resource") return item.resource?.text ?? `[resource ${item.resource?.uri ?? ""}]`;
    return `[${item.type ?? "unknown"} content${item.mimeType ? ` (${item.mimeType})` : ""}]`;
  });
  let text = parts.join("\n");
  if (!text && r.structuredContent !== undefined) text = jsonText(r.structuredContent);
  return r.isError ? `error: ${text || "the tool reported an error"}` : text;
}

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
