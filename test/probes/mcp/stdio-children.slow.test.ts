/**
 * Probe: a stdio MCP server that spawns a child of its own. Stopping the hub
 * (shutdown, or a restart after a crash) must not leave that child running:
 * otherwise every restart of a crash-looping server leaks processes on the
 * gateway's host. Nor may the gateway's own exit, without a stop. The server
 * is the SDK's, run through tsx as a real child.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, expect, it } from "vitest";
import { McpHub } from "../../../src/agent/mcp/index.js";
import { eventually } from "../../support/app.js";

const SERVER = path.resolve("test/probes/mcp/fixtures/spawning-server.ts");
const GATEWAY = path.resolve("test/probes/mcp/fixtures/exiting-gateway.ts");
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const leftovers: number[] = [];
const hubs: McpHub[] = [];
afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.stop()));
  for (const pid of leftovers.splice(0)) if (alive(pid)) process.kill(pid, "SIGKILL");
});

const pidFile = () => path.join(mkdtempSync(path.join(tmpdir(), "mcp-probe-")), "child.pid");
/** The server's pid and its own child's, as it wrote them; both are killed after the test whatever happens. */
function pids(file: string): { server: number; grandchild: number } {
  expect(existsSync(file)).toBe(true);
  const p = { server: Number(readFileSync(`${file}.server`, "utf8")), grandchild: Number(readFileSync(file, "utf8")) };
  leftovers.push(p.server, p.grandchild);
  return p;
}
const ended = (pid: number, what: string) =>
  eventually(
    () => alive(pid),
    (a) => !a,
    10_000,
    what,
  );

function spawnerHub(file: string): McpHub {
  const hub = new McpHub(
    { servers: [{ name: "spawner", kind: "stdio", command: process.execPath, args: ["--import", "tsx", SERVER, file], tools: {} }], builtinTools: {} },
    { startTimeoutMs: 15_000, backoffMs: { first: 60_000, max: 60_000 } },
  );
  hubs.push(hub);
  return hub;
}

it("stopping the hub ends the processes a stdio server started, not only the server", async () => {
  const file = pidFile();
  const hub = spawnerHub(file);
  try {
    await hub.start();
    expect(hub.status()[0]!.state).toBe("ready");
  } finally {
    await hub.stop();
  }
  const { server, grandchild } = pids(file);
  // The server itself is gone once stop() resolves; its child must follow.
  expect(alive(server)).toBe(false);
  await ended(grandchild, "the stdio server's own child to end");
}, 30_000);

it("a stdio server that crashes: what it started ends too (a crash-looping server leaks nothing)", async () => {
  const file = pidFile();
  const hub = spawnerHub(file);
  await hub.start();
  expect(hub.status()[0]!.state).toBe("ready");
  const { server, grandchild } = pids(file);
  process.kill(server, "SIGKILL");
  await eventually(
    () => hub.status()[0]!.state,
    (s) => s === "restarting",
    10_000,
    "the crash seen",
  );
  await ended(grandchild, "the crashed server's own child to end");
}, 30_000);

it("the gateway exiting without a stop (a crash, process.exit) takes its stdio servers' processes with it", async () => {
  const file = pidFile();
  const gateway = spawn(process.execPath, ["--import", "tsx", GATEWAY, file], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  gateway.stdout!.on("data", (d) => (out += String(d)));
  const code = await new Promise<number | null>((r) => gateway.once("exit", (c) => r(c)));
  expect(out.trim()).toBe("READY");
  expect(code).toBe(0);
  const { server, grandchild } = pids(file);
  // The server's stdin closed with the gateway, but a server whose child keeps it busy does not exit on its own.
  await ended(server, "the stdio server to end with the gateway");
  await ended(grandchild, "the stdio server's own child to end with the gateway");
}, 30_000);
