/**
 * Probe: a stdio server's message line is bounded as in the SDK's own
 * transport (10 MB): a server that writes more without a newline is not
 * buffered on, its call fails and it is taken for broken (restarted), instead
 * of growing the gateway's memory. The server is the SDK's, a real child.
 */
import path from "node:path";
import { afterEach, expect, it } from "vitest";
import { McpHub } from "../../../src/agent/mcp/index.js";
import { approveAll, runToolCallDetailed, toolRegistry } from "../../../src/agent/tools.js";

const SERVER = path.resolve("test/probes/mcp/fixtures/huge-line-server.ts");
const hubs: McpHub[] = [];
afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.stop()));
});

it("11 MB on stdout without a newline: the call fails and the server is restarted, not buffered on", async () => {
  const hub = new McpHub(
    { servers: [{ name: "huge", kind: "stdio", command: process.execPath, args: ["--import", "tsx", SERVER], tools: {} }], builtinTools: {} },
    { startTimeoutMs: 15_000, backoffMs: { first: 60_000, max: 60_000 } },
  );
  hubs.push(hub);
  await hub.start();
  expect(hub.status()[0]!.state).toBe("ready");
  const r = await runToolCallDetailed({ id: "c1", name: "huge__flood", arguments: "{}" }, toolRegistry(hub.tools()), approveAll, new AbortController().signal);
  expect(r.decision).toBe("error");
  expect(r.note).not.toBe("timed out");
  expect(hub.status()[0]).toMatchObject({ state: "restarting" });
  expect(hub.status()[0]!.error).toMatch(/closed/);
}, 30_000);
