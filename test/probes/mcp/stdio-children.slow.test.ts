/**
 * Probe: a stdio MCP server that spawns a child of its own. Stopping the hub
 * (shutdown, or a restart after a crash) must not leave that child running:
 * otherwise every restart of a crash-looping server leaks processes on the
 * gateway's host. The server is the SDK's, run through tsx as a real child.
 */
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, expect, it } from "vitest";
import { McpHub } from "../../../src/agent/mcp/index.js";
import { eventually } from "../../support/app.js";

const SERVER = path.resolve("test/probes/mcp/fixtures/spawning-server.ts");
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const leftovers: number[] = [];
afterEach(() => {
  for (const pid of leftovers.splice(0)) if (alive(pid)) process.kill(pid, "SIGKILL");
});

// Known, not fixed yet: the SDK's StdioClientTransport signals its direct child only; ending the server's
// own children needs the server started in a process group of its own (a transport of ours).
it.skip("stopping the hub ends the processes a stdio server started, not only the server", async () => {
  const pidFile = path.join(mkdtempSync(path.join(tmpdir(), "mcp-probe-")), "child.pid");
  const hub = new McpHub(
    { servers: [{ name: "spawner", kind: "stdio", command: process.execPath, args: ["--import", "tsx", SERVER, pidFile], tools: {} }], builtinTools: {} },
    { startTimeoutMs: 15_000, backoffMs: { first: 60_000, max: 60_000 } },
  );
  try {
    await hub.start();
    expect(hub.status()[0]!.state).toBe("ready");
  } finally {
    await hub.stop();
  }
  expect(existsSync(pidFile)).toBe(true);
  const grandchild = Number(readFileSync(pidFile, "utf8"));
  leftovers.push(grandchild);
  // The server itself is gone once stop() resolves; its child must follow.
  await eventually(
    () => alive(grandchild),
    (a) => !a,
    5_000,
    "the stdio server's own child to end",
  );
}, 30_000);
