/**
 * Probe: HTTP/1.0 has no Host header requirement, and load balancers' health
 * checks still send it without one (HAProxy's `option httpchk GET /healthz`
 * does by default). /healthz is documented as the public probe for load
 * balancers; it must answer such a request, while the operator routes keep
 * refusing it (no Host: not an allowed name).
 */
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startConsoleApp, type ConsoleApp } from "../../console/app.js";

let running: ConsoleApp | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

/** One raw request; the answer is read until the server closes (HTTP/1.0 closes after one answer). */
const raw = (port: number, text: string) =>
  new Promise<string>((resolve, reject) => {
    const s = net.connect({ port, host: "127.0.0.1" });
    let answer = "";
    s.setTimeout(10_000, () => s.destroy(new Error("no answer")));
    s.on("data", (d) => (answer += d.toString("latin1")));
    s.on("error", reject);
    s.on("close", () => resolve(answer));
    s.write(text);
  });

describe("HTTP/1.0 without a Host header", () => {
  it("/healthz answers 200 with the status; an operator route still refuses (403), never opens", async () => {
    running = await startConsoleApp();
    const port = Number(new URL(running.base).port);
    const health = await raw(port, "GET /healthz HTTP/1.0\r\n\r\n");
    const operator = await raw(port, "GET /api/sessions HTTP/1.0\r\n\r\n");
    expect({ health: health.split("\r\n")[0], body: health.split("\r\n\r\n")[1] }).toEqual({ health: "HTTP/1.1 200 OK", body: '{"status":"ok"}' });
    expect(operator.split("\r\n")[0]).toBe("HTTP/1.1 403 Forbidden");
  });
});
