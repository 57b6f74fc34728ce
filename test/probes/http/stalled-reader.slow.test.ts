/**
 * Probe: a client that sends requests and never reads the answers. The
 * README promises the connection cap cannot be held by slow clients (header
 * and request timeouts). A reader that stops reading is a slow client too:
 * once the answers fill the socket buffers, nothing of Node's request
 * timeouts applies any more (the request was received whole), so unless the
 * server has an idle/write timeout the connection is held for ever, and
 * HTTP_MAX_CONNECTIONS of them lock every webhook out.
 */
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startConsoleApp, type ConsoleApp } from "../../console/app.js";
import { eventually } from "../../support/app.js";

let running: ConsoleApp | undefined;
const sockets = new Set<net.Socket>();
afterEach(async () => {
  for (const s of sockets) s.destroy();
  sockets.clear();
  await running?.stop();
  running = undefined;
});

const connect = (port: number) =>
  new Promise<net.Socket>((resolve, reject) => {
    const s = net.connect({ port, host: "127.0.0.1" }, () => resolve(s));
    s.on("error", reject);
  });

const stall = async (port: number) => {
  const s = await connect(port);
  sockets.add(s);
  s.on("error", () => undefined);
  s.on("close", () => sockets.delete(s));
  // Never read: the answers pile up in the kernel buffers and then in Node's.
  s.pause();
  // /login is open to anyone (no token needed), ~1.5 KB an answer; pipelined.
  s.write("GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".repeat(4000));
  return s;
};

const healthz = (port: number) =>
  new Promise<string>((resolve) => {
    const s = net.connect({ port, host: "127.0.0.1" });
    let answer = "";
    s.on("data", (d) => (answer += d.toString("latin1")));
    s.on("error", () => resolve(answer || "error"));
    s.on("close", () => resolve(answer || "closed without an answer"));
    s.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  });

describe("clients that stop reading", () => {
  it("cannot hold the connection slots: the server cuts each after HTTP_REQUEST_TIMEOUT without progress, and /healthz answers again", async () => {
    running = await startConsoleApp({ HTTP_HEADERS_TIMEOUT: "1s", HTTP_REQUEST_TIMEOUT: "2s", HTTP_MAX_CONNECTIONS: "16" });
    const port = Number(new URL(running.base).port);
    for (let i = 0; i < 16; i++) await stall(port);
    // The cause awaited: the server letting go of every stalled reader (its own count of open connections).
    await eventually(
      () => running!.app.http.connections,
      (n) => n === 0,
      45_000,
      "the stalled readers cut",
    );
    expect((await healthz(port)).split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
    // Counted as such (a reader cut while a pipelined request was half read counts as a request timeout).
    const refused = (await running.app.metrics.httpRefused.get()).values.find((v) => v.labels.reason === "stalled-reader");
    expect(refused?.value).toBeGreaterThan(0);
  }, 60_000);
});
