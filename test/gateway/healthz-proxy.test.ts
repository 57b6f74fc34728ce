/**
 * /healthz's details behind a reverse proxy, over real sockets: a proxy on
 * the same machine connects from loopback, so loopback alone must not make a
 * caller the operator. With OPERATOR_TOKEN set the details need the token
 * (loopback trust only by opting in, TRUST_LOOPBACK=true); a loopback
 * request carrying a proxy's forwarding headers is never trusted.
 */
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { startConsoleApp, type ConsoleApp } from "../console/app.js";
import { request } from "./http-request.js";

const TOKEN = "healthz-test-token-0123456789abcdef";

let running: ConsoleApp | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

/** Whether the answer carried the operator's details (the adapters), or the public status alone. */
async function details(app: ConsoleApp, headers: Record<string, string> = {}): Promise<"details" | "status only"> {
  const r = await request(app.base, "/healthz", { headers });
  expect(r.status).toBe(200);
  const body = JSON.parse(r.body) as Record<string, unknown>;
  if (body.adapters === undefined) {
    expect(body).toEqual({ status: "ok" });
    return "status only";
  }
  expect(body).toMatchObject({ status: "ok", ready: true, adapters: [{ platform: "console" }] });
  return "details";
}

const PROXIED: Array<[string, Record<string, string>]> = [
  ["X-Forwarded-For", { "x-forwarded-for": "203.0.113.9" }],
  ["Forwarded", { forwarded: "for=203.0.113.9;proto=https" }],
  ["X-Real-IP", { "x-real-ip": "203.0.113.9" }],
];

describe("/healthz details behind a proxy", () => {
  it("with OPERATOR_TOKEN, a loopback caller without the token gets the status only; with the token, the details", async () => {
    running = await startConsoleApp({ OPERATOR_TOKEN: TOKEN });
    expect(await details(running)).toBe("status only");
    expect(await details(running, { host: "localhost" })).toBe("status only");
    expect(await details(running, { authorization: `Bearer ${TOKEN}` })).toBe("details");
    expect(await details(running, { authorization: "Bearer not-the-token-0123456789" })).toBe("status only");
  });

  it("TRUST_LOOPBACK=true gives a direct loopback caller the details; through a proxy (forwarding headers) still only with the token", async () => {
    running = await startConsoleApp({ OPERATOR_TOKEN: TOKEN, TRUST_LOOPBACK: "true" });
    expect(await details(running)).toBe("details");
    for (const [name, headers] of PROXIED) {
      expect(await details(running, headers), name).toBe("status only");
      expect(await details(running, { ...headers, authorization: `Bearer ${TOKEN}` }), `${name} with the token`).toBe("details");
    }
  });

  it("without a token, loopback is the operator, but not when a proxy forwarded the request", async () => {
    running = await startConsoleApp();
    expect(await details(running)).toBe("details");
    for (const [name, headers] of PROXIED) expect(await details(running, headers), name).toBe("status only");
  });

  it("TRUST_LOOPBACK is off by default and takes true or false", () => {
    expect(loadConfig({}).TRUST_LOOPBACK).toBe(false);
    expect(loadConfig({ TRUST_LOOPBACK: "true" }).TRUST_LOOPBACK).toBe(true);
    expect(() => loadConfig({ TRUST_LOOPBACK: "sometimes" })).toThrow(/TRUST_LOOPBACK must be true or false/);
  });
});
