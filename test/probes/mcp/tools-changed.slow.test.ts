/**
 * Probe: a server's tools change while it runs (notifications/tools/list_changed):
 * the hub lists them again, so the model is offered what the server has now,
 * not what it had at the last (re)connect. A server that says so thousands of
 * times at once costs at most one list in flight and one queued. The server is
 * the SDK's McpServer over stdio, a real child (fixtures/changing-server.ts).
 */
import path from "node:path";
import { afterEach, expect, it } from "vitest";
import { McpHub } from "../../../src/agent/mcp/index.js";
import { approveAll, runToolCallDetailed, toolRegistry } from "../../../src/agent/tools.js";
import { eventually } from "../../support/app.js";

const SERVER = path.resolve("test/probes/mcp/fixtures/changing-server.ts");
const hubs: McpHub[] = [];
afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.stop()));
});

async function started(): Promise<McpHub> {
  const hub = new McpHub(
    { servers: [{ name: "changing", kind: "stdio", command: process.execPath, args: ["--import", "tsx", SERVER], tools: {} }], builtinTools: {} },
    { startTimeoutMs: 15_000, backoffMs: { first: 60_000, max: 60_000 } },
  );
  hubs.push(hub);
  await hub.start();
  expect(hub.status()[0]!.state).toBe("ready");
  return hub;
}

const call = async (hub: McpHub, name: string, args: unknown = {}) =>
  (await runToolCallDetailed({ id: "c1", name, arguments: JSON.stringify(args) }, toolRegistry(hub.tools()), approveAll, new AbortController().signal)).content;
const names = (hub: McpHub) => hub.tools().map((t) => t.name);
type Stats = { lists: number; inFlight: number; maxInFlight: number };
const stats = async (hub: McpHub) => JSON.parse(await call(hub, "changing__stats")) as Stats;

it("a tool the server adds while running is offered once it says its tools changed", async () => {
  const hub = await started();
  expect(names(hub)).not.toContain("changing__added");
  expect(await call(hub, "changing__add")).toBe("added");
  await eventually(
    () => names(hub),
    (n) => n.includes("changing__added"),
    10_000,
    "the added tool offered",
  );
  expect(await call(hub, "changing__added")).toBe("here");
  expect(hub.status()[0]).toMatchObject({ state: "ready", restarts: 0 });
  expect(hub.status()[0]!.tools).toContain("added");
}, 30_000);

it("5,000 list_changed notifications at once: one tools/list in flight at a time, at most two in all", async () => {
  const hub = await started();
  const before = await stats(hub);
  expect(before).toMatchObject({ inFlight: 0, maxInFlight: 1 });
  expect(await call(hub, "changing__flood", { count: 5_000 })).toBe("sent 5000");
  // The notifications precede the flood's answer on the server's stdout, so the hub has read them all by now;
  // what they started ends once the server has answered it.
  const after = await eventually(
    () => stats(hub),
    (s) => s.lists > before.lists && s.inFlight === 0,
    10_000,
    "the re-listing done",
  );
  expect(after.maxInFlight).toBe(1);
  // One for the first notification, one queued for all the others.
  expect(after.lists - before.lists).toBeLessThanOrEqual(2);
  // And nothing more comes after: a further round trip later, still the same count.
  await call(hub, "changing__add");
  await eventually(
    () => names(hub),
    (n) => n.includes("changing__added"),
    10_000,
    "the added tool offered",
  );
  const last = await stats(hub);
  expect(last.lists - before.lists).toBeLessThanOrEqual(3);
  expect(last.maxInFlight).toBe(1);
}, 30_000);
