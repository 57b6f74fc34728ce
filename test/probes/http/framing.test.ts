/**
 * Probes over raw sockets for request framing at the edge:
 * - a connection that sends nothing at all is cut by the header timeout
 *   (the slow-header test in test/reliability sends a byte first);
 * - a body the server refused without reading (a webhook's precheck, a
 *   declared-too-large body) is still consumed as a body: bytes in it that
 *   look like a request are never served as one (request smuggling through
 *   an early answer).
 */
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startConsoleApp, type ConsoleApp } from "../../console/app.js";

let running: ConsoleApp | undefined;
const sockets = new Set<net.Socket>();
afterEach(async () => {
  for (const s of sockets) s.destroy();
  sockets.clear();
  await running?.stop();
  running = undefined;
});

/** Writes `text`, then reads until the server closes. */
const exchange = (port: number, text: string | undefined) =>
  new Promise<{ answer: string; ms: number }>((resolve, reject) => {
    const started = Date.now();
    const s = net.connect({ port, host: "127.0.0.1" });
    sockets.add(s);
    let answer = "";
    s.setTimeout(15_000, () => s.destroy(new Error("the server kept the connection open")));
    s.on("data", (d) => (answer += d.toString("latin1")));
    s.on("error", reject);
    s.on("close", () => resolve({ answer, ms: Date.now() - started }));
    if (text !== undefined) s.write(text);
  });

describe("framing", () => {
  it("a connection that never sends a byte is closed by the header timeout", async () => {
    running = await startConsoleApp({ HTTP_HEADERS_TIMEOUT: "1s", HTTP_REQUEST_TIMEOUT: "2s" });
    const { answer } = await exchange(Number(new URL(running.base).port), undefined);
    // Node answers 408 or just closes; either way the slot is free, and no 2xx was made up.
    expect(answer === "" || answer.startsWith("HTTP/1.1 408")).toBe(true);
  });

  it("the body of a request refused before its body was read is never parsed as a request of its own", async () => {
    running = await startConsoleApp({ OPERATOR_TOKEN: "t0ken-for-tests-0123456789abcdef", HTTP_REQUEST_TIMEOUT: "3s", HTTP_HEADERS_TIMEOUT: "1s" });
    const port = Number(new URL(running.base).port);
    const inner = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer t0ken-for-tests-0123456789abcdef\r\n\r\n";
    // Declared over /login's 4 KB: refused from the header alone; the body (an operator request) follows.
    const padded = inner + "x".repeat(5000 - inner.length);
    const declared = `POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${padded.length}\r\n\r\n${padded}`;
    const tail = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    const { answer } = await exchange(port, declared + tail);
    const statuses = [...answer.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
    expect(statuses[0]).toBe("413");
    expect(answer).not.toContain("# HELP");
  });
});
