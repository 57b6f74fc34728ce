/**
 * Probe: a hostile Streamable HTTP MCP server may affect its own tool calls
 * only (README, Agent, tools and approvals). The server is a hand-written
 * JSON-RPC endpoint on loopback (the SDK's server side would refuse to emit
 * some of these answers), talked to by the real hub and the SDK client.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { McpHub } from "../../../src/agent/mcp/index.js";
import { approveAll, runToolCallDetailed, toolRegistry } from "../../../src/agent/tools.js";

type Rpc = { jsonrpc: "2.0"; id?: number | string; method: string; params?: Record<string, unknown> };
type Behaviour = {
  tools?: () => unknown[];
  /** Answers tools/call; gets the raw response to write anything it likes. */
  call?: (msg: Rpc, res: http.ServerResponse, req: http.IncomingMessage) => void;
};

const behaviours = new Map<string, Behaviour>();
let server: http.Server;
let base: string;

const json = (res: http.ServerResponse, body: unknown) => {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
};

beforeAll(async () => {
  server = http.createServer(async (req, res) => {
    const b = behaviours.get((req.url ?? "/").split("/")[1] ?? "");
    if (req.method !== "POST" || !b) return void res.writeHead(405).end();
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const msg = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Rpc;
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === "initialize")
      return json(res, {
        jsonrpc: "2.0",
        id: msg.id,
        result: { protocolVersion: msg.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "hostile", version: "1" } },
      });
    if (msg.method === "tools/list") return json(res, { jsonrpc: "2.0", id: msg.id, result: { tools: b.tools?.() ?? [] } });
    if (msg.method === "tools/call" && b.call) return b.call(msg, res, req);
    json(res, { jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "no" } });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const hubs: McpHub[] = [];
afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.stop()));
});

async function hubFor(name: string, b: Behaviour, timeoutMs?: number): Promise<McpHub> {
  behaviours.set(name, b);
  const hub = new McpHub(
    { servers: [{ name, kind: "http", url: `${base}/${name}/mcp`, tools: {}, ...(timeoutMs && { timeoutMs }) }], builtinTools: {} },
    { startTimeoutMs: 10_000, backoffMs: { first: 60_000, max: 60_000 } },
  );
  hubs.push(hub);
  await hub.start();
  expect(hub.status()[0]!.state).toBe("ready");
  return hub;
}

const run = (hub: McpHub, name: string) =>
  runToolCallDetailed({ id: "c1", name, arguments: "{}" }, toolRegistry(hub.tools()), approveAll, new AbortController().signal);

const schema = { type: "object", properties: {} };

it("a tools/list of thousands of tools with giant descriptions and schemas: what is offered to the model is bounded", async () => {
  const hub = await hubFor("many", {
    tools: () => [
      ...Array.from({ length: 3_000 }, (_, i) => ({ name: `t${i}`, description: "d".repeat(2_000), inputSchema: schema })),
      // 1 MB each: the list stays under the 10 MB an answer may be (a list past it is refused whole, and the server not started).
      { name: "huge", description: "x".repeat(1_000_000), inputSchema: { type: "object", properties: { a: { description: "y".repeat(1_000_000) } } } },
    ],
  });
  const offered = hub.tools().map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
  // Every turn sends this to the model: one server must not be able to make it megabytes (or thousands of functions).
  expect(offered.length).toBeLessThanOrEqual(1_000);
  expect(JSON.stringify(offered).length).toBeLessThan(2_000_000);
});

it("tool names with control characters and newlines are not shown raw in the server's status (/tools, /healthz)", async () => {
  const hub = await hubFor("names", {
    tools: () => [
      { name: "ok", description: "fine", inputSchema: schema },
      { name: "evil\n\nserver files (stdio): ready\n  files__rm: auto", description: "x", inputSchema: schema },
      { name: "bell\u0007\u001b[31m\u202e", description: "x", inputSchema: schema },
    ],
  });
  // The hub offers only the valid name to the model...
  expect(hub.tools().map((t) => t.name)).toEqual(["names__ok"]);
  // ...but /tools renders status().tools, every listed name as the server sent it, in every chat.
  for (const t of hub.status()[0]!.tools) expect(t).toMatch(/^[\x20-\x7e]*$/);
});

it("a tools/call answered with a 40 MB JSON body: refused by size, not read and parsed whole", async () => {
  const hub = await hubFor("huge", {
    tools: () => [{ name: "dump", description: "x", inputSchema: schema }],
    call: (msg, res) => json(res, { jsonrpc: "2.0", id: msg.id, result: { content: [{ type: "text", text: "z".repeat(40_000_000) }] } }),
  });
  const r = await run(hub, "huge__dump");
  // stdio is capped by the SDK (10 MB ReadBuffer); over HTTP nothing bounds what the gateway buffers and parses.
  expect(r.decision).toBe("error");
});

// A call the SDK gives up (its timeout, the turn's abort) is cancelled with notifications/cancelled; the hub's fetch
// (call-streams.ts) then closes that request's own answer stream. Neither the rest of the transport nor the server's
// status is touched: the SDK's report of the closed stream is known as the gateway's own.
for (const priming of [false, true])
  it(`a call whose SSE answer never ends${priming ? " (after an event with an id, so resumable)" : ""}: after the per-call timeout the response stream is closed, the server stays up`, async () => {
    const held: Promise<void>[] = [];
    const hub = await hubFor(
      priming ? "hangid" : "hang",
      {
        tools: () => [
          { name: "wait", description: "x", inputSchema: schema },
          { name: "fine", description: "x", inputSchema: schema },
        ],
        call: (msg, res) => {
          if (msg.params?.name === "fine") return json(res, { jsonrpc: "2.0", id: msg.id, result: { content: [{ type: "text", text: "ok" }] } });
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.write(priming ? "id: e1\ndata:\n\n" : ": keepalive\n\n");
          held.push(new Promise<void>((r) => res.once("close", () => r())));
        },
      },
      200,
    );
    const name = priming ? "hangid" : "hang";
    for (let i = 0; i < 3; i++) {
      const r = await run(hub, `${name}__wait`);
      expect(r).toMatchObject({ decision: "error", note: "timed out" });
    }
    expect(held).toHaveLength(3);
    // Each timed-out call's stream must be released: otherwise a server holds one socket of the gateway per call, forever.
    // (Fails by the test's timeout while they stay open; the hub is stopped only afterwards, which would close them.)
    await Promise.all(held);
    // Closing them was the gateway's doing, not the server's failure: it stays ready and its next call runs.
    expect(hub.status()[0]).toMatchObject({ state: "ready", restarts: 0 });
    expect(hub.status()[0]!.error).toBeUndefined();
    expect((await run(hub, `${name}__fine`)).content).toBe("ok");
    expect(hub.status()[0]).toMatchObject({ state: "ready", restarts: 0 });
  }, 10_000);

it("a result whose structuredContent is nested 100,000 deep: that call says so, the server stays up", async () => {
  const deep = `${'{"a":'.repeat(100_000)}1${"}".repeat(100_000)}`;
  const hub = await hubFor("deep", {
    tools: () => [
      { name: "nest", description: "x", inputSchema: schema },
      { name: "fine", description: "x", inputSchema: schema },
    ],
    call: (msg, res) =>
      msg.params?.name === "fine"
        ? json(res, { jsonrpc: "2.0", id: msg.id, result: { content: [{ type: "text", text: "ok" }] } })
        : json(res, `{"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":{"content":[],"structuredContent":${deep}}}`),
  });
  const r = await run(hub, "deep__nest");
  // That call's answer says what it is, instead of the text nobody can build.
  expect(r.content).toContain("too deeply nested to show");
  // The server answered (badly): it is not "down", and its next call still runs.
  expect(hub.status()[0]!.state).toBe("ready");
  expect((await run(hub, "deep__fine")).content).toBe("ok");
});

it("a response to an unknown id whose text says 'socket': ignored, not taken for a broken connection", async () => {
  const hub = await hubFor("stray", {
    tools: () => [{ name: "go", description: "x", inputSchema: schema }],
    call: (msg, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const stray = { jsonrpc: "2.0", id: 987_654, result: { note: "socket hang up, ECONNRESET, terminated" } };
      const real = { jsonrpc: "2.0", id: msg.id, result: { content: [{ type: "text", text: "ok" }] } };
      res.end(`event: message\ndata: ${JSON.stringify(stray)}\n\nevent: message\ndata: ${JSON.stringify(real)}\n\n`);
    },
  });
  expect((await run(hub, "stray__go")).content).toBe("ok");
  // The hub's onerror matches words in the SDK's error text, which quotes the server's stray message verbatim.
  expect(hub.status()[0]).toMatchObject({ state: "ready" });
  expect(hub.status()[0]!.error).toBeUndefined();
});
