/**
 * Probe: a stdio server's stderr is a third party's output in the gateway's
 * log. A server that writes 10,000 lines must not put 10,000 lines in the
 * log: at most the per-server budget is logged, then one line says how many
 * were left out. The server is the SDK's, a real child (fixtures/chatty-server.ts).
 */
import path from "node:path";
import { afterEach, expect, it } from "vitest";
import { McpHub } from "../../../src/agent/mcp/index.js";
import { eventually } from "../../support/app.js";

const SERVER = path.resolve("test/probes/mcp/fixtures/chatty-server.ts");
const hubs: McpHub[] = [];
afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.stop()));
});

type Line = { level: string; obj: Record<string, unknown>; msg?: string };
function capture(): { lines: Line[]; log: Record<"debug" | "info" | "warn" | "error", (obj: Record<string, unknown>, msg?: string) => void> } {
  const lines: Line[] = [];
  const at = (level: string) => (obj: Record<string, unknown>, msg?: string) => void lines.push({ level, obj, msg });
  return { lines, log: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") } };
}

it("10,000 stderr lines: at most the budget is logged, each cut to 500 characters, then one line counts the rest", async () => {
  const { lines, log } = capture();
  const hub = new McpHub(
    {
      servers: [{ name: "chatty", kind: "stdio", command: process.execPath, args: ["--import", "tsx", SERVER, "10000"], tools: {} }],
      builtinTools: {},
    },
    // A window far longer than the test: what is counted is lines, not time.
    { log, startTimeoutMs: 15_000, backoffMs: { first: 60_000, max: 60_000 }, stderrLines: { lines: 50, windowMs: 3_600_000 } },
  );
  hubs.push(hub);
  await hub.start();
  expect(hub.status()[0]!.state).toBe("ready");
  // The server is ended; its stderr is read to the end, then the count of what was left out is said.
  await hub.stop();
  const dropped = await eventually(
    () => lines.filter((l) => typeof l.obj.dropped === "number"),
    (d) => d.length > 0,
    10_000,
    "the dropped-lines summary",
  );
  const logged = lines.filter((l) => typeof l.obj.stderr === "string");
  expect(logged).toHaveLength(50);
  expect(logged[0]!.obj.stderr).toMatch(/^warning 0: something is off/);
  for (const l of logged) expect((l.obj.stderr as string).length).toBeLessThanOrEqual(500);
  expect(dropped).toHaveLength(1);
  expect(dropped[0]!.obj).toMatchObject({ server: "chatty", dropped: 10_000 - 50 });
  // Nothing else of the server's stderr reached the log.
  expect(lines.filter((l) => JSON.stringify(l).includes("warning ")).length).toBe(50);
}, 30_000);
