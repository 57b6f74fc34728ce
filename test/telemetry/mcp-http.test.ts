/**
 * MCP over Streamable HTTP carries the trace (issue 30, Build 3): a tool
 * call made inside a span (the execute_tool span, in the gateway) sends
 * `traceparent` naming that span, so a tool server that traces joins the
 * message's trace. Outside a span, and while telemetry is off, no header is
 * added. The server is the MCP SDK's own, in this process, recording each
 * request's headers by JSON-RPC method.
 */
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { trace } from "@opentelemetry/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { McpHub } from "../../src/agent/mcp/index.js";
import { silentLogger } from "../../src/log.js";
import { inSpan, startTelemetry, type Telemetry } from "../../src/telemetry/index.js";
import { OtlpReceiver } from "../support/otlp-receiver.js";

const seen: Array<{ method: string; traceparent: string | undefined }> = [];
let server: http.Server;
let url: string;
let receiver: OtlpReceiver;

beforeAll(async () => {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
    seen.push({ method: String(body?.method ?? req.method), traceparent: req.headers.traceparent as string | undefined });
    const id = req.headers["mcp-session-id"];
    let transport = typeof id === "string" ? sessions.get(id) : undefined;
    if (!transport) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => void sessions.set(sid, transport!),
      });
      const mcp = new McpServer({ name: "trace-test", version: "1.0.0" });
      mcp.registerTool("echo", { description: "Says it back.", inputSchema: { text: z.string() } }, async ({ text }) => ({
        content: [{ type: "text", text }],
      }));
      await mcp.connect(transport);
    }
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  receiver = await OtlpReceiver.start();
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await receiver.close();
});

async function withHub(run: (hub: McpHub) => Promise<void>): Promise<void> {
  const hub = new McpHub({ servers: [{ name: "web", kind: "http", url, tools: {} }], builtinTools: {} }, { log: silentLogger });
  await hub.start();
  try {
    await run(hub);
  } finally {
    await hub.stop();
  }
}

const call = (hub: McpHub) => hub.tools()[0]!.run({ text: "hi" }, { signal: new AbortController().signal } as never);

describe("MCP over HTTP carries traceparent", () => {
  it("off: no header on any request", async () => {
    seen.length = 0;
    await withHub(async (hub) => {
      expect(await call(hub)).toBe("hi");
    });
    expect(seen.some((s) => s.method === "tools/call")).toBe(true);
    expect(seen.every((s) => s.traceparent === undefined)).toBe(true);
  });

  it("on: the tools/call request names the span it was made in; outside a span nothing is added", async () => {
    const telemetry: Telemetry = await startTelemetry(
      {
        OTEL_SDK_DISABLED: false,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: undefined,
        OTEL_METRIC_EXPORT_INTERVAL: 60_000,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_HEADERS: undefined,
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: false,
      },
      silentLogger,
    );
    try {
      seen.length = 0;
      await withHub(async (hub) => {
        // The handshake and the tool listing ran outside any span.
        expect(seen.every((s) => s.traceparent === undefined)).toBe(true);
        let expected = "";
        await inSpan("execute_tool web__echo", {}, async (span) => {
          const c = span.spanContext();
          expected = `00-${c.traceId}-${c.spanId}-01`;
          expect(trace.getActiveSpan()).toBe(span);
          expect(await call(hub)).toBe("hi");
        });
        const calls = seen.filter((s) => s.method === "tools/call");
        expect(calls).toHaveLength(1);
        expect(calls[0]!.traceparent).toBe(expected);
      });
    } finally {
      await telemetry.shutdown();
    }
  });
});
