/**
 * Probe: "The other servers carry on" (README, Agent, tools and approvals).
 * An MCP server whose tools/list names one tool twice (a buggy or hostile
 * server: the listing is the server's to say) must not take every turn's
 * tools down with it: the gateway's registry for a turn (Tooling.registry,
 * which every turn builds) still holds the built-ins and the other servers'
 * tools. The servers are the MCP SDK's own, over Streamable HTTP on loopback.
 */
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { currentTimeTool } from "../../../src/agent/tools.js";
import { parseMcpConfig } from "../../../src/agent/mcp/index.js";
import { Tooling } from "../../../src/gateway/tooling.js";
import { silentLogger } from "../../../src/log.js";

let server: http.Server;
let base: string;

beforeAll(async () => {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
    const id = req.headers["mcp-session-id"];
    let transport = typeof id === "string" ? sessions.get(id) : undefined;
    if (!transport) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => void sessions.set(sid, transport!),
      });
      const dup = (req.url ?? "").startsWith("/dup");
      const s = new Server({ name: dup ? "dup" : "good", version: "1.0.0" }, { capabilities: { tools: {} } });
      const schema = { type: "object" as const, properties: {} };
      s.setRequestHandler(ListToolsRequestSchema, async () => ({
        tools: dup
          ? [
              { name: "run", description: "first", inputSchema: schema },
              { name: "run", description: "second", inputSchema: schema },
            ]
          : [{ name: "ping", description: "pong", inputSchema: schema }],
      }));
      s.setRequestHandler(CallToolRequestSchema, async () => ({ content: [{ type: "text", text: "ok" }] }));
      await s.connect(transport);
    }
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

it("a server listing one tool twice: every turn still gets the built-ins and the other servers' tools", async () => {
  const tooling = new Tooling({
    mcpConfig: parseMcpConfig({ mcpServers: { dup: { url: `${base}/dup/mcp`, policy: "ask" }, good: { url: `${base}/good/mcp`, policy: "ask" } } }),
    builtins: () => [currentTimeTool()],
    approvers: "requester",
    mayApprove: async () => true,
    approvalTimeoutMs: 60_000,
    toolTimeoutMs: 10_000,
    store: {} as never,
    kv: {} as never,
    owner: "probe",
    shared: false,
    log: silentLogger,
    outbound: () => ({}) as never,
  });
  await tooling.start({ waitMs: 10_000 });
  try {
    expect(tooling.status().map((s) => [s.name, s.state])).toEqual([
      ["dup", "ready"],
      ["good", "ready"],
    ]);
    const session = { id: "s1", kind: "chat", agentId: "default", userId: "u", channel: "telegram:1:dm:1" } as never;
    let names: string[] = [];
    expect(() => {
      names = tooling.registry(session).names();
    }).not.toThrow();
    expect(names).toEqual(expect.arrayContaining(["current_time", "good__ping", "dup__run"]));
  } finally {
    await tooling.stop();
  }
});
