/**
 * One MCP server as the hub runs it: connects through the SDK client, lists
 * its tools (again when it says they changed), marks it down and restarts it
 * with backoff when it fails, runs its calls, and reports its status.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { noopLog, type AgentLog } from "../types.js";
import { TOOL_SEPARATOR, type ServerState, type ServerStatus } from "../tool-source.js";
import { AnswerTooLarge, boundedTools, printable, type ListedTool } from "./bounds.js";
import { isOwnClose } from "./call-streams.js";
import type { McpServerConfig } from "./config.js";
import { resultText } from "./result.js";
import { StderrLog, type StderrLimits } from "./stderr-log.js";
import { openTransport } from "./transport.js";

export interface McpHubOptions {
  log?: AgentLog;
  /** A server must connect and list its tools within this (a re-listing too). Default 20 s. */
  startTimeoutMs?: number;
  /** Restart backoff: first delay, doubling to the max. Default 1 s to 60 s. */
  backoffMs?: { first: number; max: number };
  /** Per-call default when the server's config sets none. */
  callTimeoutMs?: number;
  /** How much of a stdio server's stderr is logged. Default 100 lines per 60 s per server. */
  stderrLines?: StderrLimits;
}

export type HandleOptions = Required<Omit<McpHubOptions, "log">> & { log: AgentLog };

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** Whether a server's tool can be offered: its namespaced name is 1-64 letters, digits, _ or -. */
export const validToolName = (server: string, tool: string): boolean => NAME.test(`${server}${TOOL_SEPARATOR}${tool}`);

/** The SDK's own words for a broken HTTP connection, before any ":" (after it, an error may quote the server verbatim). */
const BROKEN = /fetch failed|ECONNREFUSED|ECONNRESET|terminated|socket|disconnected|reconnect/i;

export class McpServerHandle {
  state: ServerState = "starting";
  error: string | undefined;
  tools: ListedTool[] = [];
  restarts = 0;
  nextAttemptAt: Date | undefined;
  #client: Client | undefined;
  #timer: NodeJS.Timeout | undefined;
  #failures = 0;
  #stopped = false;
  #connecting: Promise<void> | undefined;
  /** The client of an attempt still connecting: a stop closes it (and its child) too. */
  #pending: Client | undefined;
  readonly #stderr: StderrLog;

  constructor(
    readonly config: McpServerConfig,
    private readonly opts: HandleOptions,
  ) {
    this.#stderr = new StderrLog(config.name, opts.log, opts.stderrLines);
  }

  start(): Promise<void> {
    this.#connecting ??= this.#connect().finally(() => {
      this.#connecting = undefined;
    });
    return this.#connecting;
  }

  async #connect(): Promise<void> {
    if (this.#stopped) return;
    const client = new Client({ name: "switchboard", version: "0.1.0" });
    const transport = openTransport(this.config, this.#stderr);
    this.#pending = client;
    // Registered before connecting, so a change said while the first list is on its way is not missed.
    let changedWhileStarting = false;
    const relist = coalesced(() => this.#relist(client));
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      if (this.#client === client) relist();
      else if (this.#pending === client) changedWhileStarting = true;
    });
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
      this.#watch(client);
      this.opts.log.info({ server: this.config.name, transport: this.config.kind, tools: this.tools.length }, "mcp server ready");
      if (changedWhileStarting) relist();
    } catch (e) {
      await client.close().catch(() => undefined);
      this.#down(`could not start: ${describe(e)}`);
    } finally {
      if (this.#pending === client) this.#pending = undefined;
    }
  }

  /** How a ready server's failure shows: its connection closing, and over HTTP the SDK's errors. */
  #watch(client: Client): void {
    client.onclose = () => {
      if (this.#client === client) this.#down("the connection closed (the server exited or crashed)");
    };
    // Over HTTP there is no child to watch: a broken stream or a refused request is how a dead server shows.
    if (this.config.kind !== "http") return;
    // True for the rest of the synchronous turn in which the SDK reported a stream the gateway closed itself.
    let ownClose = false;
    client.onerror = (e) => {
      if (this.#client !== client) return;
      // A given-up call's stream, closed by the gateway (call-streams.ts): the server is not gone. When that stream had
      // an event id the SDK adds, in the same breath, that it will not resume it: that one is ours too.
      if (isOwnClose(e)) {
        ownClose = true;
        queueMicrotask(() => {
          ownClose = false;
        });
        return;
      }
      if (!ownClose && BROKEN.test(describe(e).split(":")[0]!)) this.#down(`the connection failed: ${describe(e)}`);
    };
  }

  /** The server said its tools changed: list them again, with the same bounds; a failure keeps the list there was. */
  async #relist(client: Client): Promise<void> {
    if (this.#client !== client) return;
    const warnings: Array<[Record<string, unknown>, string | undefined]> = [];
    try {
      const listed = await client.listTools(undefined, { timeout: this.opts.startTimeoutMs });
      if (this.#client !== client) return;
      const before = this.tools.map((t) => t.name).join("\n");
      this.tools = boundedTools(this.config.name, listed.tools, { ...noopLog, warn: (o, m) => void warnings.push([o, m]) });
      // Said only when the names changed: a server that keeps saying so must not fill the log.
      if (this.tools.map((t) => t.name).join("\n") === before) return;
      for (const [o, m] of warnings) this.opts.log.warn(o, m);
      this.opts.log.info({ server: this.config.name, tools: this.tools.length }, "mcp server's tools changed");
    } catch (e) {
      if (this.#client === client)
        this.opts.log.warn({ server: this.config.name, error: describe(e) }, "mcp server said its tools changed; listing them failed, the previous list stays");
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
      // Neither is an answer too large for the limit (that call fails, the server stays), nor a stream the gateway closed.
      const answered = e instanceof McpError || e instanceof AnswerTooLarge || (e as { cause?: unknown })?.cause instanceof AnswerTooLarge || isOwnClose(e);
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

/**
 * `run` at most once at a time, with at most one more queued: a flood of calls while it runs costs one run more,
 * not one each.
 */
export function coalesced(run: () => Promise<void>): () => void {
  let running = false;
  let queued = false;
  const go = (): void => {
    running = true;
    void run()
      .catch(() => undefined)
      .finally(() => {
        running = false;
        if (queued) {
          queued = false;
          go();
        }
      });
  };
  return () => {
    if (running) queued = true;
    else go();
  };
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
