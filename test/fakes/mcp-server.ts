/**
 * An MCP tool server for tests, built with the official SDK's server side.
 *
 *   node --import tsx test/fakes/mcp-server.ts            stdio (a child of the gateway)
 *   node --import tsx test/fakes/mcp-server.ts --http 0   Streamable HTTP on 127.0.0.1 (prints LISTENING <port>)
 *   ... --hold-until <file>                                 answers nothing (no MCP handshake) until <file> exists,
 *                                                            so a test holds a slow start open as long as it needs;
 *                                                            meanwhile <file>.held holds its pid
 *
 * Tools: echo {text}, slow {ms} (answers after ms, so it can be killed mid-call),
 * big {chars} (a long result, for truncation), fail (an error result),
 * whoami (its pid, so a test can kill it).
 */
import { randomUUID } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

function server(): McpServer {
  const s = new McpServer({ name: "switchboard-test-tools", version: "1.0.0" });
  s.registerTool("echo", { description: "Says the text back.", inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: "text", text: `echo: ${text}` }],
  }));
  s.registerTool("slow", { description: "Answers after ms milliseconds.", inputSchema: { ms: z.number().int().min(0).max(600_000) } }, async ({ ms }) => {
    await new Promise((r) => setTimeout(r, ms));
    return { content: [{ type: "text", text: `slept ${ms} ms` }] };
  });
  s.registerTool("big", { description: "A long result.", inputSchema: { chars: z.number().int().min(1).max(1_000_000) } }, async ({ chars }) => ({
    content: [{ type: "text", text: "x".repeat(chars) }],
  }));
  s.registerTool("fail", { description: "Always reports an error." }, async () => ({
    isError: true,
    content: [{ type: "text", text: "the test tool failed on purpose" }],
  }));
  s.registerTool("whoami", { description: "The server's process id." }, async () => ({ content: [{ type: "text", text: String(process.pid) }] }));
  return s;
}

const holdAt = process.argv.indexOf("--hold-until");
if (holdAt >= 0) {
  // Released by the test creating the file: the start takes exactly as long as the test needs, never a guessed sleep.
  const file = process.argv[holdAt + 1]!;
  writeFileSync(`${file}.held`, String(process.pid));
  await new Promise<void>((resolve) => {
    const poll = setInterval(() => {
      if (!existsSync(file)) return;
      clearInterval(poll);
      resolve();
    }, 20);
  });
}

const httpAt = process.argv.indexOf("--http");
if (httpAt < 0) {
  await server().connect(new StdioServerTransport());
} else {
  // Stateful Streamable HTTP: one transport (and server) per session, as the SDK's examples do.
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
    const id = req.headers["mcp-session-id"];
    let transport = typeof id === "string" ? sessions.get(id) : undefined;
    if (!transport) {
      if (typeof id === "string") {
        res
          .writeHead(404, { "content-type": "application/json" })
          .end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }));
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => void sessions.set(sid, transport!),
      });
      transport.onclose = () => transport?.sessionId && sessions.delete(transport.sessionId);
      await server().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  });
  http.listen(Number(process.argv[httpAt + 1] ?? 0), "127.0.0.1", () => process.stdout.write(`LISTENING ${(http.address() as AddressInfo).port}\n`));
}
