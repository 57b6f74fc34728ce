/**
 * The transport of one connection attempt to a server, from its config: a
 * stdio child in a process group of its own (stdio-transport.ts), or
 * Streamable HTTP through the SDK with the gateway's fetch (traced, answers
 * bounded, given-up calls' streams closed).
 */
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { tracedFetch } from "../../telemetry/index.js";
import { boundedFetch } from "./bounds.js";
import { closingFetch } from "./call-streams.js";
import type { McpServerConfig } from "./config.js";
import type { StderrLog } from "./stderr-log.js";
import { GroupStdioTransport } from "./stdio-transport.js";

export function openTransport(c: McpServerConfig, stderr: StderrLog): Transport {
  if (c.kind === "stdio") {
    // The child's stderr is piped and logged (bounded), never mixed into the gateway's own output.
    return new GroupStdioTransport(
      { command: c.command, args: c.args, env: { ...getDefaultEnvironment(), ...c.env }, ...(c.cwd && { cwd: c.cwd }) },
      stderr.sink(),
    );
  }
  // No silent reconnection of a broken stream: a server that went away is marked down (and its calls fail) at once.
  return new StreamableHTTPClientTransport(new URL(c.url), {
    requestInit: { headers: c.headers ?? {} },
    // Each request carries the active span's traceparent (a tool call's execute_tool span), so a server that traces joins it.
    // Bounded (bounds.ts): an answer is refused past 10 MB, before it is buffered whole. A call the SDK gives up
    // (timeout, abort) has its answer stream closed (call-streams.ts), so a server cannot hold a socket per call.
    fetch: closingFetch(boundedFetch(tracedFetch)),
    reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1_000, maxReconnectionDelay: 1_000, reconnectionDelayGrowFactor: 1 },
  });
}
