/**
 * The MCP restart backoff on fake timers: a Streamable HTTP server that answers
 * every request with 503 (a real loopback server, in this process) is tried
 * again after 1, 2, 4 and 8 s, then every 8 s (the cap), never sooner, and
 * its status names the next attempt. Only setTimeout, clearTimeout and Date
 * are faked, so the HTTP round trips run as usual.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { McpHub } from "../../src/agent/mcp/index.js";

const T0 = Date.parse("2026-03-01T09:00:00Z");
let server: http.Server | undefined;
let hub: McpHub | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await hub?.stop();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  hub = server = undefined;
});

/** Real I/O under fake timers: yield to the event loop until cond holds (setImmediate is not faked). */
async function settle(cond: () => boolean, what: string): Promise<void> {
  const t0 = performance.now();
  while (!cond()) {
    if (performance.now() - t0 > 20_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

describe("MCP restart backoff", () => {
  it("a server that keeps failing is retried after first * 2^n up to the max, never sooner; the status names the next attempt", async () => {
    let requests = 0;
    server = http.createServer((req, res) => {
      requests++;
      req.resume();
      res.writeHead(503, { "content-type": "text/plain" }).end("down for maintenance");
    });
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"], now: T0 });
    hub = new McpHub(
      { servers: [{ name: "web", kind: "http", url, tools: {} }], builtinTools: {} },
      { backoffMs: { first: 1000, max: 8000 }, startTimeoutMs: 3_600_000 },
    );
    await hub.start();
    const status = () => hub!.status()[0]!;
    expect(status()).toMatchObject({ state: "restarting", restarts: 0, nextAttemptAt: new Date(T0 + 1000).toISOString() });
    expect(status().error).toMatch(/could not start/);
    expect(requests).toBeGreaterThan(0);

    for (const [n, delay, next] of [
      [1, 1000, 2000],
      [2, 2000, 4000],
      [3, 4000, 8000],
      [4, 8000, 8000],
      [5, 8000, 8000],
    ] as const) {
      const before = requests;
      await vi.advanceTimersByTimeAsync(delay - 1);
      expect(requests, `attempt ${n} came before its ${delay} ms`).toBe(before);
      expect(status().restarts).toBe(n - 1);
      await vi.advanceTimersByTimeAsync(1);
      await settle(() => status().restarts === n && status().nextAttemptAt === new Date(Date.now() + next).toISOString(), `attempt ${n} to fail`);
      expect(requests).toBeGreaterThan(before);
      expect(status().state).toBe("restarting");
    }
  });
});
