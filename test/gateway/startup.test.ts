/**
 * What the gateway answers while it starts, with a real MCP server (the
 * SDK-built test server over stdio) that does not finish its handshake until
 * the test releases it, so the window is held open as long as the test
 * needs, never guessed with a sleep:
 *
 * - between the listener opening and the adapters being ready, every route
 *   but the public ones answers 503 with Retry-After (never 404), over a
 *   real socket; /healthz says "starting";
 * - a server slower than MCP_START_TIMEOUT does not hold the start: the
 *   gateway becomes ready, /healthz shows the server "starting", and once it
 *   is up its tools are offered;
 * - a stop while a server is still starting ends its process.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConsoleAdapter } from "../../adapters/console/index.js";
import type { McpConfig } from "../../src/agent/mcp/index.js";
import { loadConfig } from "../../src/config.js";
import { createApp, type App } from "../../src/gateway/app.js";
import { eventually } from "../support/app.js";
import { sessionInfo } from "../support/runtime.js";
import { request } from "./http-request.js";

const SERVER = path.resolve("test/fakes/mcp-server.ts");

let app: App | undefined;
let dir: string | undefined;
let release: (() => void) | undefined;
afterEach(async () => {
  release?.();
  release = undefined;
  await app?.stop();
  app = undefined;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A gateway (console adapter, SQLite file) whose one MCP server waits for `release()`; the start is begun, not awaited. */
async function startHeld(env: Record<string, string>) {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-startup-"));
  const gate = path.join(dir, "release-mcp");
  release = () => fs.writeFileSync(gate, "");
  const mcpConfig: McpConfig = {
    servers: [
      { name: "late", kind: "stdio", command: process.execPath, args: ["--import", "tsx", SERVER, "--hold-until", gate], tools: {}, rule: { policy: "auto" } },
    ],
    builtinTools: {},
  };
  const config = loadConfig({ DATABASE_URL: `file:${path.join(dir, "x.db")}`, HTTP_PORT: "0", LOG_LEVEL: "silent", ...env });
  app = await createApp(config, { adapters: () => [new ConsoleAdapter()], mcpConfig });
  const started = app.start();
  started.catch(() => undefined);
  const a = app;
  const port = (await eventually(
    () => a.http.address,
    (x) => x !== null,
    15_000,
    "the listener",
  ))!.port;
  // The server is running and holding its handshake (its pid is written once it holds).
  const pid = Number(
    await eventually(
      () => (fs.existsSync(`${gate}.held`) ? fs.readFileSync(`${gate}.held`, "utf8") : ""),
      (s) => s !== "",
      30_000,
      "the MCP server holding",
    ),
  );
  return { base: `http://127.0.0.1:${port}`, started, pid };
}

interface Health {
  status: string;
  ready?: boolean;
  mcp?: Array<{ name: string; state: string; tools: string[] }>;
}
const health = async (base: string): Promise<Health> => JSON.parse((await request(base, "/healthz")).body) as Health;

/** Every kind of route: the console's (mounted by its adapter as it starts), the operator API, the HTTP API, login, metrics, an unknown path. */
const ROUTES: Array<[string, string, string?]> = [
  ["GET", "/"],
  ["GET", "/console/console.js"],
  ["GET", "/console/console.css"],
  ["GET", "/api/console/events"],
  ["GET", "/api/console/history?chatId=console:dm:alice"],
  ["GET", "/api/console/address?type=private&id=alice"],
  ["POST", "/api/console/messages", JSON.stringify({ chat: { type: "private" }, sender: { id: "alice", name: "Alice" }, text: "hi" })],
  ["POST", "/api/console/approvals", "{}"],
  ["GET", "/api/sessions"],
  ["GET", "/api/bindings?channel=x"],
  ["GET", "/api/events"],
  ["GET", "/api/v1/openapi.json"],
  ["POST", "/api/v1/messages", "{}"],
  ["GET", "/metrics"],
  ["GET", "/login"],
  ["POST", "/login", "token=x"],
  ["GET", "/not/mounted/yet"],
];

describe("answers while the gateway starts", () => {
  it("until the start is done every route but the public ones answers 503 with Retry-After, never 404; then they serve", async () => {
    const { base, started } = await startHeld({ MCP_START_TIMEOUT: "10m" });
    const during: Record<string, string> = {};
    for (const [method, p, body] of ROUTES) {
      const r = await request(base, p, { method, ...(body !== undefined && { body, headers: { "content-type": "application/json", origin: base } }) });
      during[`${method} ${p}`] = `${r.status} retry-after=${r.headers["retry-after"] ?? "none"}`;
    }
    console.log(`while starting: ${JSON.stringify(during)}`);
    expect(during).toEqual(Object.fromEntries(ROUTES.map(([m, p]) => [`${m} ${p}`, "503 retry-after=2"])));
    expect(await health(base)).toMatchObject({ status: "starting", ready: false, mcp: [{ name: "late", state: "starting" }] });
    expect((await request(base, "/healthz?ready=1")).status).toBe(503);

    release!();
    await started;
    expect((await request(base, "/")).status).toBe(200);
    expect((await request(base, "/api/sessions")).status).toBe(200);
    expect(await health(base)).toMatchObject({ status: "ok", ready: true, mcp: [{ name: "late", state: "ready" }] });
  }, 60_000);

  it("a server slower than MCP_START_TIMEOUT does not hold the start; /healthz shows it starting, then ready, and its tools appear", async () => {
    const { base, started } = await startHeld({ MCP_START_TIMEOUT: "300ms" });
    // The start finishes while the server still holds its handshake.
    await started;
    expect(await health(base)).toMatchObject({ status: "ok", ready: true, mcp: [{ name: "late", state: "starting", tools: [] }] });
    expect((await request(base, "/healthz?ready=1")).status).toBe(200);
    expect((await request(base, "/")).status).toBe(200);
    // A turn's tools in some session: the built-ins, and the MCP servers' once they are ready.
    const session = sessionInfo();
    expect(app!.tooling.registry(session).names()).not.toContain("late__echo");

    release!();
    const up = await eventually(
      () => health(base),
      (h) => h.mcp?.[0]?.state === "ready",
      30_000,
      "the MCP server ready",
    );
    expect(up.mcp![0]!.tools).toContain("echo");
    expect(app!.tooling.registry(session).names()).toContain("late__echo");
  }, 60_000);

  it("a stop while a server is still starting ends its process", async () => {
    const { started, pid } = await startHeld({ MCP_START_TIMEOUT: "300ms" });
    await started;
    await app!.stop();
    app = undefined;
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await eventually(alive, (a) => !a, 15_000, `MCP server pid ${pid} gone`);
  }, 60_000);

  it("MCP_START_TIMEOUT is 10 s unless set, and is a duration", () => {
    expect(loadConfig({}).MCP_START_TIMEOUT).toBe(10_000);
    expect(loadConfig({ MCP_START_TIMEOUT: "1m" }).MCP_START_TIMEOUT).toBe(60_000);
    expect(() => loadConfig({ MCP_START_TIMEOUT: "soon" })).toThrow(/MCP_START_TIMEOUT must be a duration/);
  });
});
