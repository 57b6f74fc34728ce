/**
 * MCP tool servers through the official SDK client against a server built
 * with the SDK (test/fakes/mcp-server.ts), over stdio and Streamable HTTP:
 * namespaced tools, a server killed mid-call (an error result, restarted,
 * status visible), a server that never starts (visible; the rest work),
 * per-call timeout, truncation, and policies from the mcpServers config.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { McpHub, parseMcpConfig, type McpConfig } from "../../src/agent/mcp/index.js";
import { approveAll, runToolCallDetailed, toolRegistry } from "../../src/agent/tools.js";
import { eventually } from "../support/app.js";

const SERVER = path.resolve("test/fakes/mcp-server.ts");
const stdio = (name: string) => ({ name, kind: "stdio" as const, command: process.execPath, args: ["--import", "tsx", SERVER], tools: {} });
const fast = { startTimeoutMs: 15_000, backoffMs: { first: 100, max: 1_000 } };

function httpServer(port = 0): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ["--import", "tsx", SERVER, "--http", String(port)], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (d) => {
      const m = /LISTENING (\d+)/.exec(String(d));
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.once("exit", (code) => reject(new Error(`mcp http server exited ${code}`)));
  });
}

const hubs: McpHub[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.stop()));
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
});

async function started(config: McpConfig, opts: ConstructorParameters<typeof McpHub>[1] = {}): Promise<McpHub> {
  const hub = new McpHub(config, { ...fast, ...opts });
  hubs.push(hub);
  await hub.start();
  return hub;
}

const call = (hub: McpHub, name: string, args: unknown, timeoutMs?: number) =>
  runToolCallDetailed(
    { id: "c1", name, arguments: JSON.stringify(args) },
    toolRegistry(hub.tools()),
    approveAll,
    new AbortController().signal,
    timeoutMs ? { timeoutMs } : {},
  );

describe("MCP over stdio", () => {
  it("lists the server's tools as server__tool and runs them", async () => {
    const hub = await started({ servers: [stdio("files")], builtinTools: {} });
    expect(hub.status()[0]).toMatchObject({ name: "files", transport: "stdio", state: "ready" });
    expect(
      hub
        .tools()
        .map((t) => t.name)
        .sort(),
    ).toEqual(["files__big", "files__echo", "files__fail", "files__slow", "files__whoami"]);
    expect((await call(hub, "files__echo", { text: "hi" })).content).toBe("echo: hi");
    const failed = await call(hub, "files__fail", {});
    expect(failed.content).toBe("error: the test tool failed on purpose");
  });

  it("a server killed mid-call: the call gets an error result, the server is restarted, its status shows it", async () => {
    const hub = await started({ servers: [stdio("files")], builtinTools: {} });
    const pid = Number((await call(hub, "files__whoami", {})).content);
    const pending = call(hub, "files__slow", { ms: 30_000 });
    await new Promise((r) => setTimeout(r, 200));
    process.kill(pid, "SIGKILL");
    const r = await pending;
    expect(r.decision).toBe("error");
    expect(r.content).toMatch(/^error: files__slow failed: .*(closed|Connection)/i);
    // Down, with why and when it tries again; then back, with the restart counted.
    const down = hub.status()[0]!;
    expect(down.state).toBe("restarting");
    expect(down.error).toMatch(/closed/);
    const back = await eventually(
      () => hub.status()[0]!,
      (s) => s.state === "ready" && s.restarts >= 1,
      20_000,
      "the server restarted",
    );
    expect(back.error).toBeUndefined();
    const again = Number((await call(hub, "files__whoami", {})).content);
    expect(again).not.toBe(pid);
    // While it was down, a call got an error result that says so rather than nothing.
  }, 60_000);

  it("a server that never starts is visible and restarting; the other servers work", async () => {
    const broken = { name: "broken", kind: "stdio" as const, command: process.execPath, args: ["-e", "process.exit(3)"], tools: {} };
    const hub = await started({ servers: [broken, stdio("files")], builtinTools: {} });
    const [b, f] = hub.status();
    expect(b).toMatchObject({ name: "broken", state: "restarting" });
    expect(b!.error).toMatch(/could not start/);
    expect(b!.nextAttemptAt).toBeDefined();
    expect(f).toMatchObject({ name: "files", state: "ready" });
    expect((await call(hub, "files__echo", { text: "still here" })).content).toBe("echo: still here");
    // It keeps being retried with backoff, counted.
    await eventually(
      () => hub.status()[0]!.restarts,
      (n) => n >= 2,
      20_000,
      "restart attempts",
    );
  }, 60_000);

  it("per-call timeout and truncation apply to MCP tools as to built-ins", async () => {
    const hub = await started({ servers: [{ ...stdio("files"), timeoutMs: 500 }], builtinTools: {} });
    const slow = await call(hub, "files__slow", { ms: 5_000 });
    expect(slow.decision).toBe("error");
    expect(slow.content).toMatch(/^error: files__slow (did not finish within|failed: .*timed out)/i);
    const big = await call(hub, "files__big", { chars: 50_000 });
    expect(big.content.length).toBeLessThan(17_000);
    expect(big.content.endsWith("[truncated]")).toBe(true);
  }, 60_000);
});

describe("MCP over Streamable HTTP", () => {
  it("runs tools; killed mid-call gives an error result; it reconnects once the server is back", async () => {
    const first = await httpServer();
    children.push(first.child);
    const url = `http://127.0.0.1:${first.port}/mcp`;
    const hub = await started({ servers: [{ name: "web", kind: "http", url, tools: {} }], builtinTools: {} });
    expect(hub.status()[0]).toMatchObject({ transport: "http", state: "ready" });
    expect((await call(hub, "web__echo", { text: "over http" })).content).toBe("echo: over http");
    const pending = call(hub, "web__slow", { ms: 30_000 });
    await new Promise((r) => setTimeout(r, 200));
    first.child.kill("SIGKILL");
    const r = await pending;
    expect(r.decision).toBe("error");
    await eventually(
      () => hub.status()[0]!,
      (s) => s.state === "restarting",
      10_000,
      "the server marked down",
    );
    // While it is down, a call is an error result naming the server's state.
    const meanwhile = await call(hub, "web__echo", { text: "x" });
    expect(meanwhile.content).toMatch(/error: .*"web" is restarting/);
    const second = await httpServer(first.port);
    children.push(second.child);
    await eventually(
      () => hub.status()[0]!,
      (s) => s.state === "ready" && s.restarts >= 1,
      20_000,
      "reconnected",
    );
    expect((await call(hub, "web__echo", { text: "back" })).content).toBe("echo: back");
  }, 60_000);
});

describe("MCP_CONFIG", () => {
  it("reads the mcpServers shape with policies per server and per tool, limited to chats", () => {
    const c = parseMcpConfig({
      mcpServers: {
        files: {
          command: "npx",
          args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
          policy: "auto",
          tools: { write_file: "ask", delete: { policy: "deny" } },
        },
        web: { url: "https://tools.example.com/mcp", headers: { authorization: "Bearer x" }, chats: ["slack:C123"], policy: "auto" },
      },
      builtinTools: { current_time: "ask" },
    });
    const hub = new McpHub(c);
    const dm = { platform: "telegram", chatId: "42" };
    expect(hub.policyOf("files__read_file", dm)).toBe("auto");
    expect(hub.policyOf("files__write_file", dm)).toBe("ask");
    expect(hub.policyOf("files__delete", dm)).toBe("deny");
    expect(hub.policyOf("web__search", { platform: "slack", chatId: "C123" })).toBe("auto");
    expect(hub.policyOf("web__search", dm)).toBe("deny");
    expect(hub.policyOf("current_time", dm)).toBeUndefined();
    expect(c.builtinTools).toEqual({ current_time: { policy: "ask" } });
  });

  it("a bad file names MCP_CONFIG and what is wrong", () => {
    expect(() => parseMcpConfig({ mcpServers: { "bad name!": { command: "x" } } })).toThrow(/MCP_CONFIG is invalid at mcpServers/);
    expect(() => parseMcpConfig({ mcpServers: { a: { command: "x", policy: "maybe" } } })).toThrow(/MCP_CONFIG is invalid/);
    expect(() => parseMcpConfig({ mcpServers: { a: { args: [] } } })).toThrow(/MCP_CONFIG is invalid/);
  });
});
