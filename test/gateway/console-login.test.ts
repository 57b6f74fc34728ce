/**
 * The console's login tried from outside, over real sockets against the real
 * gateway on a SQLite file: a stranger's failures never lock the operator
 * out (they are counted per client address, and the right token is checked
 * first); another site cannot sign a browser in or out; the cookie is a
 * signed session the server checks on every request: it expires by the
 * server's clock, a forged or edited one is refused, /logout revokes it for
 * every copy, and `switchboard logout-all` revokes every session (in the
 * database, so across a restart).
 */
import { createHmac } from "node:crypto";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { runCli } from "../../src/cli.js";
import { LoginFailures } from "../../src/gateway/http/login-failures.js";
import { startConsoleApp, type ConsoleApp } from "../console/app.js";
import { request } from "./http-request.js";

const TOKEN = "login-test-token-0123456789abcdef";
const SEVEN_DAYS_MS = 7 * 24 * 3600 * 1000;

let running: ConsoleApp | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await running?.stop();
  running = undefined;
});

const form = { "content-type": "application/x-www-form-urlencoded" };
const sameOrigin = (app: ConsoleApp) => ({ ...form, origin: app.base, "sec-fetch-site": "same-origin" });

async function signIn(app: ConsoleApp, o: { token?: string; localAddress?: string; headers?: Record<string, string> } = {}) {
  return request(app.base, "/login", {
    method: "POST",
    headers: o.headers ?? sameOrigin(app),
    body: `token=${encodeURIComponent(o.token ?? TOKEN)}&next=%2F`,
    ...(o.localAddress && { localAddress: o.localAddress }),
  });
}

/** The cookie pair (`name=value`) a sign-in set. */
async function cookieOf(app: ConsoleApp): Promise<string> {
  const r = await signIn(app);
  expect(r.status).toBe(303);
  return r.headers["set-cookie"]![0]!.split(";")[0]!;
}

const sessions = (app: ConsoleApp, cookie: string) => request(app.base, "/api/sessions", { headers: { cookie } }).then((r) => r.status);

describe("console login: failures are per client, and the right token always signs in", () => {
  it("50 wrong tokens from one address: the right token still signs in from another address and from that one", async () => {
    running = await startConsoleApp({ OPERATOR_TOKEN: TOKEN });
    const stranger = "127.0.0.2";
    const statuses: number[] = [];
    for (let i = 0; i < 50; i++) statuses.push((await signIn(running, { token: `wrong-${i}`, localAddress: stranger })).status);
    console.log(`50 wrong sign-ins from ${stranger}: ${statuses.filter((s) => s === 401).length} x 401, ${statuses.filter((s) => s === 429).length} x 429`);
    // The stranger is slowed down after 10 failures a minute...
    expect(statuses.slice(0, 10).every((s) => s === 401)).toBe(true);
    expect(statuses.slice(10).every((s) => s === 429)).toBe(true);
    // ...another client's mistake is still just a mistake...
    expect((await signIn(running, { token: "typo" })).status).toBe(401);
    // ...and the right token signs in, from the operator's address and from the stranger's own.
    for (const localAddress of ["127.0.0.1", stranger]) {
      const r = await signIn(running, { localAddress });
      expect(r.status, `sign-in from ${localAddress}`).toBe(303);
      const cookie = r.headers["set-cookie"]![0]!.split(";")[0]!;
      expect(await sessions(running, cookie)).toBe(200);
    }
  });

  it("the failure map is bounded and forgets the address that failed longest ago; a window passes", () => {
    let now = 0;
    const failures = new LoginFailures({ perWindow: 2, windowMs: 60_000, maxAddresses: 3, now: () => now });
    for (const a of ["a", "a", "b", "c"]) failures.fail(a);
    expect(failures.fail("a")).toBe(true);
    failures.fail("d");
    expect(failures.size).toBe(3);
    // "b" was forgotten first (the least recent failure): it starts again from one.
    expect([failures.fail("b"), failures.fail("b"), failures.fail("b")]).toEqual([false, false, true]);
    now = 60_000;
    expect(failures.fail("b")).toBe(false);
    // An IPv4 client seen as IPv6-mapped is the same client.
    for (let i = 0; i < 2; i++) failures.fail("::ffff:10.0.0.1");
    expect(failures.fail("10.0.0.1")).toBe(true);
  });
});

describe("console login: another site cannot sign a browser in or out", () => {
  it.each([
    ["Origin of another site and Sec-Fetch-Site: cross-site", { origin: "http://evil.example", "sec-fetch-site": "cross-site" }],
    ["Origin of another site", { origin: "http://evil.example" }],
    ["Sec-Fetch-Site: cross-site (no Origin)", { "sec-fetch-site": "cross-site" }],
    ["an opaque Origin", { origin: "null" }],
  ])("with %s, /login and /logout answer 403 and set nothing", async (_what, headers: Record<string, string>) => {
    running = await startConsoleApp({ OPERATOR_TOKEN: TOKEN });
    const cookie = await cookieOf(running);
    const login = await signIn(running, { headers: { ...form, ...headers } });
    expect(login.status).toBe(403);
    expect(login.headers["set-cookie"]).toBeUndefined();
    const logout = await request(running.base, "/logout", { method: "POST", headers: { ...form, ...headers, cookie }, body: "" });
    expect(logout.status).toBe(403);
    expect(logout.headers["set-cookie"]).toBeUndefined();
    // The forged sign-out revoked nothing.
    expect(await sessions(running, cookie)).toBe(200);
  });
});

describe("console login: the cookie is a server-checked, revocable session", () => {
  it("expires by the server's clock after 7 days, whatever the browser keeps", async () => {
    running = await startConsoleApp({ OPERATOR_TOKEN: TOKEN });
    const signedInAt = Date.now();
    const cookie = await cookieOf(running);
    // Only Date is faked: the sockets and the database run for real.
    vi.useFakeTimers({ toFake: ["Date"], now: signedInAt + SEVEN_DAYS_MS - 60_000 });
    expect(await sessions(running, cookie)).toBe(200);
    vi.setSystemTime(signedInAt + SEVEN_DAYS_MS + 1_000);
    expect(await sessions(running, cookie)).toBe(401);
  });

  it("a forged or edited cookie is refused, the old token-derived value included", async () => {
    running = await startConsoleApp({ OPERATOR_TOKEN: TOKEN });
    const cookie = await cookieOf(running);
    const value = cookie.slice(cookie.indexOf("=") + 1);
    const [sid, issued, expires, generation, mac] = value.split(".");
    const forged = {
      // Today's value derived from the token alone never expired and could not be revoked.
      tokenDerived: createHmac("sha256", TOKEN).update("switchboard console login v1").digest("hex"),
      longerExpiry: [sid, issued, String(Number(expires) + 86_400), generation, mac].join("."),
      otherSession: [`${"A".repeat(22)}`, issued, expires, generation, mac].join("."),
      flippedMac: [sid, issued, expires, generation, `${mac!.slice(0, -1)}${mac!.endsWith("A") ? "B" : "A"}`].join("."),
      malformed: "x".repeat(22),
      huge: "a".repeat(8_000),
    };
    const statuses = Object.fromEntries(
      await Promise.all(Object.entries(forged).map(async ([k, v]) => [k, await sessions(running!, `switchboard_operator=${v}`)] as const)),
    );
    expect(statuses).toEqual(Object.fromEntries(Object.keys(forged).map((k) => [k, 401])));
    expect(await sessions(running, cookie)).toBe(200);
  });

  it("/logout revokes that session on the server: a copy of the cookie is refused, another browser's stays signed in", async () => {
    running = await startConsoleApp({ OPERATOR_TOKEN: TOKEN });
    const mine = await cookieOf(running);
    const other = await cookieOf(running);
    const out = await request(running.base, "/logout", { method: "POST", headers: { ...sameOrigin(running), cookie: mine }, body: "" });
    expect(out.status).toBe(303);
    expect(out.headers["set-cookie"]![0]).toMatch(/^switchboard_operator=; .*Max-Age=0/);
    // Whoever kept a copy of the cookie (the browser ignoring the clearing, a stolen value) is refused.
    expect(await sessions(running, mine)).toBe(401);
    expect(await sessions(running, other)).toBe(200);
  });

  it("`switchboard logout-all` revokes every console session, also after a restart; a new sign-in works", async () => {
    running = await startConsoleApp({ OPERATOR_TOKEN: TOKEN });
    const before = [await cookieOf(running), await cookieOf(running)];
    const lines: string[] = [];
    const env = { DATABASE_URL: `file:${path.join(running.dir, "x.db")}` };
    const code = await runCli(["logout-all", "--json"], { out: (l) => lines.push(l), err: (l) => lines.push(l) }, env);
    expect(code, lines.join("\n")).toBe(0);
    expect(JSON.parse(lines.join("\n"))).toEqual({ signedOut: "all" });
    for (const c of before) expect(await sessions(running, c)).toBe(401);
    const after = await cookieOf(running);
    expect(await sessions(running, after)).toBe(200);

    const dir = running.dir;
    await running.stop({ keepDatabase: true });
    running = await startConsoleApp({ OPERATOR_TOKEN: TOKEN }, {}, { dir });
    for (const c of before) expect(await sessions(running, c)).toBe(401);
    expect(await sessions(running, after)).toBe(200);
    // A new token signs everyone out too: the cookie's key comes from it.
    await running.stop({ keepDatabase: true });
    running = await startConsoleApp({ OPERATOR_TOKEN: `${TOKEN}-rotated` }, {}, { dir });
    expect(await sessions(running, after)).toBe(401);
  });
});
