/**
 * Probe: a proxy may send the Host with the scheme's default port
 * (`Host: bot.example.com:443`) while the browser's Origin never names it
 * (`https://bot.example.com`). The console's cross-site check compared the
 * two as strings, so behind such a proxy every sign-in and console POST was
 * refused; a page of another site must still be.
 */
import { afterEach, describe, expect, it } from "vitest";
import { originMatchesHost } from "../../../src/gateway/http/operator-auth.js";
import { startConsoleApp, type ConsoleApp } from "../../console/app.js";
import { request } from "../../gateway/http-request.js";

const TOKEN = "origin-port-token-0123456789abcdef";
let running: ConsoleApp | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

describe("an Origin against a Host that names the default port", () => {
  it("is the same origin when only the default port differs; never when the host, port or scheme's port differs", () => {
    expect(originMatchesHost("https://bot.example.com", "bot.example.com:443")).toBe(true);
    expect(originMatchesHost("https://bot.example.com", "BOT.example.com")).toBe(true);
    expect(originMatchesHost("http://127.0.0.1:8787", "127.0.0.1:8787")).toBe(true);
    expect(originMatchesHost("https://bot.example.com", "bot.example.com:8443")).toBe(false);
    expect(originMatchesHost("http://bot.example.com", "bot.example.com:443")).toBe(false);
    expect(originMatchesHost("https://evil.example", "bot.example.com:443")).toBe(false);
    expect(originMatchesHost("https://bot.example.com", "evil.example/@bot.example.com")).toBe(false);
    expect(originMatchesHost("https://bot.example.com", undefined)).toBe(false);
    expect(originMatchesHost("null", "bot.example.com")).toBe(false);
  });

  it("signs in through a proxy that sends `Host: <name>:443`; a page of another site is still refused", async () => {
    running = await startConsoleApp({ PUBLIC_URL: "https://bot.example.com", OPERATOR_TOKEN: TOKEN });
    const login = (origin: string) =>
      request(running!.base, "/login", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", host: "bot.example.com:443", origin, "x-forwarded-for": "203.0.113.9" },
        body: `token=${TOKEN}&next=%2F`,
      });
    expect((await login("https://bot.example.com")).status).toBe(303);
    expect((await login("https://evil.example")).status).toBe(403);
  });
});
