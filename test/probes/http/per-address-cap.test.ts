/**
 * Probe: one client address taking every connection slot. HTTP_MAX_CONNECTIONS
 * (server.maxConnections) is one pool for everyone, so a single address could
 * hold all of it, idle, and lock the Telegram and Slack webhooks and the
 * operator out. HTTP_MAX_CONNECTIONS_PER_ADDRESS caps what one address (an
 * IPv6 client's /64) holds; a reverse proxy's address, which every client
 * shares, is left out of it (HTTP_MAX_CONNECTIONS_PER_ADDRESS_EXEMPT, loopback
 * by default: the documented deployments put the proxy on this machine).
 *
 * Over raw sockets from 127.0.0.1, with the exemption emptied so loopback is
 * counted; another address is 127.0.0.2 (all of 127/8 is loopback on Linux),
 * checked for first. Every wait is for the server's own count of connections.
 */
import { EventEmitter } from "node:events";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { AddressCap, addressKey } from "../../../src/gateway/http/address-cap.js";
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

/** Whether this machine lets a socket connect from 127.0.0.2 (Linux: yes; macOS: only with an alias). */
const secondLoopback = await new Promise<boolean>((resolve) => {
  const server = net.createServer((s) => s.destroy());
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as net.AddressInfo;
    const s = net.connect({ port, host: "127.0.0.1", localAddress: "127.0.0.2" }, () => {
      s.destroy();
      server.close(() => resolve(true));
    });
    s.on("error", () => server.close(() => resolve(false)));
  });
});

const CAP = 3;
/** Idle connections must outlive the test on any machine: only the cap may close them. */
const PATIENT = { HTTP_HEADERS_TIMEOUT: "10m", HTTP_REQUEST_TIMEOUT: "10m" };

/** A connection that sends nothing and is kept open. */
const hold = (port: number) =>
  new Promise<net.Socket>((resolve, reject) => {
    const s = net.connect({ port, host: "127.0.0.1" }, () => resolve(s));
    sockets.add(s);
    s.on("error", reject);
    s.on("close", () => sockets.delete(s));
  });

/** Everything the server sends on one connection until it closes; `send` is written first (nothing: only reads). */
const exchange = (port: number, send: string, localAddress = "127.0.0.1") =>
  new Promise<string>((resolve) => {
    const s = net.connect({ port, host: "127.0.0.1", localAddress });
    let answer = "";
    s.on("data", (d) => (answer += d.toString("latin1")));
    s.on("error", () => resolve(answer || "reset"));
    s.on("close", () => resolve(answer || "closed without an answer"));
    if (send) s.write(send);
  });

const HEALTHZ = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
const statusLine = (answer: string) => answer.split("\r\n")[0];

const refusedPerAddress = async (app: ConsoleApp) =>
  (await app.app.metrics.httpRefused.get()).values.find((v) => v.labels.reason === "connections-per-address")?.value ?? 0;

describe("one address holding connections (HTTP_MAX_CONNECTIONS_PER_ADDRESS)", () => {
  it.skipIf(!secondLoopback)(
    "the connection past the cap is answered 503 and closed, counted in /metrics; another address gets through; a closed one frees its slot",
    async () => {
      running = await startConsoleApp({ ...PATIENT, HTTP_MAX_CONNECTIONS_PER_ADDRESS: String(CAP), HTTP_MAX_CONNECTIONS_PER_ADDRESS_EXEMPT: "none" });
      const port = Number(new URL(running.base).port);
      const held = [];
      for (let i = 0; i < CAP; i++) held.push(await hold(port));
      await eventually(
        () => running!.app.http.connections,
        (n) => n === CAP,
        10_000,
        "the held connections accepted",
      );

      // The next one from the same address: told why, and closed before anything of it is read.
      expect(statusLine(await exchange(port, ""))).toBe("HTTP/1.1 503 Service Unavailable");
      // A request sent at once on such a connection is never served (a reset, or the 503 at most).
      expect(await exchange(port, HEALTHZ)).not.toContain("200 OK");
      expect(await refusedPerAddress(running)).toBeGreaterThanOrEqual(2);
      // The cap is this address's alone.
      expect(statusLine(await exchange(port, HEALTHZ, "127.0.0.2"))).toBe("HTTP/1.1 200 OK");
      // The held ones are untouched.
      expect(running.app.http.connections).toBe(CAP);

      held[0]!.destroy();
      await eventually(
        () => running!.app.http.connections,
        (n) => n === CAP - 1,
        10_000,
        "the closed connection let go",
      );
      expect(statusLine(await exchange(port, HEALTHZ))).toBe("HTTP/1.1 200 OK");
    },
    30_000,
  );

  it("by default loopback (the reverse proxy on this machine) is not counted: every client behind it shares its address", async () => {
    running = await startConsoleApp({ ...PATIENT, HTTP_MAX_CONNECTIONS_PER_ADDRESS: String(CAP) });
    const port = Number(new URL(running.base).port);
    for (let i = 0; i < CAP + 2; i++) await hold(port);
    await eventually(
      () => running!.app.http.connections,
      (n) => n === CAP + 2,
      10_000,
      "the held connections accepted",
    );
    expect(statusLine(await exchange(port, HEALTHZ))).toBe("HTTP/1.1 200 OK");
    expect(await refusedPerAddress(running)).toBe(0);
  });
});

describe("what an address is counted under", () => {
  /** Stands in for an accepted socket: its address, and the close the cap listens for. */
  const socket = (remoteAddress: string) => Object.assign(new EventEmitter(), { remoteAddress }) as unknown as net.Socket;

  it("an IPv6 client by its /64, an IPv4-mapped one as IPv4, a zone dropped", () => {
    expect(addressKey("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:0db8:0001:0002:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(addressKey("::1")).toBe("0:0:0:0::/64");
    expect(addressKey("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(addressKey("::ffff:203.0.113.9")).toBe("203.0.113.9");
    expect(addressKey("203.0.113.9")).toBe("203.0.113.9");
    expect(addressKey(undefined)).toBeUndefined();
  });

  it("one /64 shares one cap, another /64 has its own, an exempt block and a cap of 0 count nothing, a close frees the slot", () => {
    const cap = new AddressCap(2, ["10.0.0.0/8", "fd00::/8"]);
    const a = socket("2001:db8:1:2::1");
    expect(cap.admit(a)).toBe(true);
    expect(cap.admit(socket("2001:db8:1:2::ffff"))).toBe(true);
    expect(cap.admit(socket("2001:db8:1:2:8000::9"))).toBe(false);
    expect(cap.admit(socket("2001:db8:1:3::1"))).toBe(true);
    for (let i = 0; i < 5; i++) expect(cap.admit(socket(`10.1.2.${i}`))).toBe(true);
    for (let i = 0; i < 5; i++) expect(cap.admit(socket("::ffff:10.9.9.9"))).toBe(true);
    for (let i = 0; i < 5; i++) expect(cap.admit(socket("fd00::5"))).toBe(true);
    expect(cap.addresses).toBe(2);
    a.emit("close");
    expect(cap.admit(socket("2001:db8:1:2::7"))).toBe(true);

    const off = new AddressCap(0, []);
    for (let i = 0; i < 5; i++) expect(off.admit(socket("203.0.113.9"))).toBe(true);
  });

  it("the setting takes addresses, CIDR blocks, loopback or none, and names a bad entry", () => {
    const exempt = (v?: string) =>
      loadConfig({ ...(v !== undefined && { HTTP_MAX_CONNECTIONS_PER_ADDRESS_EXEMPT: v }) }).HTTP_MAX_CONNECTIONS_PER_ADDRESS_EXEMPT;
    expect(exempt()).toEqual(["127.0.0.0/8", "::1/128"]);
    expect(exempt("none")).toEqual([]);
    expect(exempt("loopback, 172.18.0.0/16, fd00::/8, 192.0.2.7")).toEqual(["127.0.0.0/8", "::1/128", "172.18.0.0/16", "fd00::/8", "192.0.2.7"]);
    expect(() => exempt("10.0.0.0/33")).toThrow(/HTTP_MAX_CONNECTIONS_PER_ADDRESS_EXEMPT/);
    expect(() => exempt("proxy.internal")).toThrow(/proxy\.internal/);
    expect(loadConfig({}).HTTP_MAX_CONNECTIONS_PER_ADDRESS).toBe(256);
  });
});
