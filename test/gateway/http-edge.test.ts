/**
 * The HTTP edge in-process: exposure (OPERATOR_TOKEN, bearer, login cookie),
 * DNS rebinding (the Host allowlist), CSRF (Origin), the split operator
 * port, /healthz details, 413s the client reads, HEAD and 405, JSON errors
 * with request ids, console text cut to MAX_INBOUND_CHARS, and retention.
 */
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { Retention } from "../../src/gateway/retention.js";
import { silentLogger } from "../../src/log.js";
import { DeliveryStore, InboundStore } from "../../src/store/index.js";
import { eventually, startConsoleApp, type ConsoleApp } from "../console/app.js";
import { request } from "./http-request.js";
import { prisma } from "../support/prisma.js";

const TOKEN = "t0ken-for-tests-0123456789abcdef";

let running: ConsoleApp | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

const consoleMessage = (text = "hi", sender = "alice") => JSON.stringify({ chat: { type: "private" }, sender: { id: sender, name: sender }, text });

/** Every operator route, with a real session id for the one that needs it. */
async function operatorRoutes(app: ConsoleApp, auth: Record<string, string>): Promise<string[]> {
  const posted = await request(app.base, "/api/console/messages", {
    method: "POST",
    headers: { "content-type": "application/json", ...auth },
    body: consoleMessage(),
  });
  expect(posted.status).toBe(202);
  const sessionId = await eventually(async () => {
    const r = JSON.parse((await request(app.base, "/api/sessions", { headers: auth })).body) as { sessions: Array<{ id: string }> };
    return r.sessions[0]?.id;
  }, "a session");
  return [
    "/",
    "/console/console.js",
    "/console/console.css",
    "/api/sessions",
    `/api/sessions/${sessionId}`,
    "/api/bindings",
    "/api/events",
    "/api/console/events",
    "/api/console/history?chatId=dm:alice",
    "/api/console/address?type=private&id=alice",
    "/metrics",
  ];
}

describe("exposure: OPERATOR_TOKEN", () => {
  it("a non-loopback HTTP_HOST without OPERATOR_TOKEN stops the start with one line naming it and how to make one", () => {
    let err: unknown;
    try {
      loadConfig({ HTTP_HOST: "0.0.0.0" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).variable).toBe("OPERATOR_TOKEN");
    expect((err as ConfigError).message).toMatch(/openssl rand -hex 32/);
    expect((err as ConfigError).message).not.toContain("\n");
    // The operator surface moved to loopback: no token needed.
    expect(() => loadConfig({ HTTP_HOST: "0.0.0.0", OPERATOR_HOST: "127.0.0.1", OPERATOR_PORT: "8788" })).not.toThrow();
    expect(() => loadConfig({ HTTP_HOST: "0.0.0.0", OPERATOR_PORT: "8788" })).not.toThrow();
    expect(() => loadConfig({ HTTP_HOST: "0.0.0.0", OPERATOR_HOST: "0.0.0.0", OPERATOR_PORT: "8788" })).toThrow(/OPERATOR_TOKEN is required/);
    expect(() => loadConfig({ HTTP_HOST: "0.0.0.0", OPERATOR_TOKEN: "short" })).toThrow(/OPERATOR_TOKEN must be at least 16 characters/);

    // The real command's exit: exposure.slow.test.ts.
  });

  it("with a token, every operator route answers 401 without it and 200 with it; a Prometheus scrape with the bearer works", async () => {
    running = await startConsoleApp({ HTTP_HOST: "0.0.0.0", OPERATOR_TOKEN: TOKEN });
    const bearer = { authorization: `Bearer ${TOKEN}` };
    const routes = await operatorRoutes(running, bearer);
    const table: Record<string, [number, number, number]> = {};
    for (const r of routes) {
      const none = await request(running.base, r);
      const wrong = await request(running.base, r, { headers: { authorization: "Bearer not-the-token-at-all" } });
      const right = await request(running.base, r, { headers: bearer });
      table[r] = [none.status, wrong.status, right.status];
    }
    const post = [
      (await request(running.base, "/api/console/messages", { method: "POST", headers: { "content-type": "application/json" }, body: consoleMessage("x") }))
        .status,
      (
        await request(running.base, "/api/console/messages", {
          method: "POST",
          headers: { "content-type": "application/json", ...bearer },
          body: consoleMessage("y"),
        })
      ).status,
    ];
    console.log(`exposure: [no token, wrong token, token] ${JSON.stringify(table)}; POST /api/console/messages ${JSON.stringify(post)}`);
    for (const [route, [none, wrong, right]] of Object.entries(table)) {
      expect({ route, none, wrong, right }).toEqual({ route, none: 401, wrong: 401, right: 200 });
    }
    expect(post).toEqual([401, 202]);
    const unauthorized = await request(running.base, "/api/sessions");
    expect(unauthorized.headers["www-authenticate"]).toMatch(/^Bearer/);
    expect(JSON.parse(unauthorized.body)).toMatchObject({ error: expect.stringMatching(/OPERATOR_TOKEN/), requestId: expect.any(String) });

    // A Prometheus scrape: bearer_token in its config, its Accept and User-Agent.
    const scrape = await request(running.base, "/metrics", {
      headers: { ...bearer, accept: "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", "user-agent": "Prometheus/2.53.0" },
    });
    expect(scrape.status).toBe(200);
    expect(scrape.body).toMatch(/^# TYPE switchboard_inbound_total counter$/m);
    expect(scrape.body).toMatch(/^switchboard_http_refused_total\{reason="auth"\} \d+$/m);
  });

  it("the login form sets an HttpOnly, SameSite=Strict cookie that opens the console; a wrong token does not", async () => {
    running = await startConsoleApp({ HTTP_HOST: "0.0.0.0", OPERATOR_TOKEN: TOKEN });
    const page = await request(running.base, "/", { headers: { accept: "text/html" } });
    expect(page.status).toBe(303);
    expect(page.headers.location).toBe("/login?next=%2F");
    const form = await request(running.base, "/login");
    expect(form.status).toBe(200);
    expect(form.body).toContain('name="token"');
    const origin = { origin: running.base.replace("0.0.0.0", "127.0.0.1"), "content-type": "application/x-www-form-urlencoded" };
    const wrong = await request(running.base, "/login", { method: "POST", headers: origin, body: "token=nope&next=%2F" });
    expect(wrong.status).toBe(401);
    expect(wrong.headers["set-cookie"]).toBeUndefined();
    const right = await request(running.base, "/login", { method: "POST", headers: origin, body: `token=${TOKEN}&next=%2F` });
    expect(right.status).toBe(303);
    expect(right.headers.location).toBe("/");
    const cookie = right.headers["set-cookie"]![0]!;
    expect(cookie).toMatch(/^switchboard_operator=[\w-]{22}\.\d+\.\d+\.[0-9a-f]+\.[\w-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/);
    // The cookie is a signed session (test/gateway/console-login.test.ts), not the token.
    expect(cookie).not.toContain(TOKEN);
    const value = cookie.split(";")[0]!;
    expect((await request(running.base, "/", { headers: { cookie: value } })).status).toBe(200);
    expect((await request(running.base, "/api/sessions", { headers: { cookie: value } })).status).toBe(200);
    expect((await request(running.base, "/api/sessions", { headers: { cookie: `switchboard_operator=${"0".repeat(64)}` } })).status).toBe(401);
    // An off-site redirect target is refused.
    const offsite = await request(running.base, "/login", {
      method: "POST",
      headers: origin,
      body: `token=${TOKEN}&next=${encodeURIComponent("//evil.example/")}`,
    });
    expect(offsite.headers.location).toBe("/");
  });

  it("on loopback without a token the console stays open (the two-command start)", async () => {
    running = await startConsoleApp();
    expect((await request(running.base, "/")).status).toBe(200);
    expect((await request(running.base, "/api/sessions")).status).toBe(200);
    expect((await request(running.base, "/metrics")).status).toBe(200);
    expect((await request(running.base, "/api/sessions", { headers: { host: `localhost:${new URL(running.base).port}` } })).status).toBe(200);
  });
});

describe("DNS rebinding and CSRF", () => {
  it.each([
    ["a loopback bind without a token", {}],
    ["a token (even when the request carries it)", { OPERATOR_TOKEN: TOKEN }],
  ])("Host: evil.example is refused on every operator route, with %s", async (_what, env: Record<string, string>) => {
    running = await startConsoleApp(env);
    const auth: Record<string, string> = env.OPERATOR_TOKEN ? { authorization: `Bearer ${TOKEN}` } : {};
    const routes = await operatorRoutes(running, auth);
    const statuses: Record<string, number> = {};
    for (const r of routes) {
      statuses[r] = (await request(running.base, r, { headers: { ...auth, host: "evil.example:8787", origin: "http://evil.example:8787" } })).status;
      statuses[`absolute-form ${r}`] = (await request(running.base, `http://evil.example${r}`, { headers: auth })).status;
    }
    statuses["POST /api/console/messages"] = (
      await request(running.base, "/api/console/messages", {
        method: "POST",
        headers: { ...auth, host: "evil.example", origin: "http://evil.example", "content-type": "application/json" },
        body: consoleMessage(),
      })
    ).status;
    statuses["POST /login"] = (
      await request(running.base, "/login", {
        method: "POST",
        headers: { host: "evil.example", "content-type": "application/x-www-form-urlencoded" },
        body: `token=${TOKEN}`,
      })
    ).status;
    console.log(`rebinding (${_what}): ${JSON.stringify(statuses)}`);
    expect(Object.values(statuses).every((s) => s === 403)).toBe(true);
    // The webhooks' public routes do not care about Host; /healthz answers with a status only.
    const health = await request(running.base, "/healthz", { headers: { host: "evil.example" } });
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toEqual({ status: "ok" });
  });

  it("a state-changing request needs a matching Origin; no CORS is granted", async () => {
    running = await startConsoleApp();
    const post = (headers: Record<string, string>) =>
      request(running!.base, "/api/console/messages", {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: consoleMessage("csrf"),
      });
    const host = new URL(running.base).host;
    const results = {
      otherOrigin: (await post({ origin: "http://evil.example" })).status,
      opaqueOrigin: (await post({ origin: "null" })).status,
      crossSiteNoOrigin: (await post({ "sec-fetch-site": "cross-site" })).status,
      sameOrigin: (await post({ origin: `http://${host}` })).status,
      script: (await post({})).status,
    };
    expect(results).toEqual({ otherOrigin: 403, opaqueOrigin: 403, crossSiteNoOrigin: 403, sameOrigin: 202, script: 202 });
    const preflight = await request(running.base, "/api/console/messages", {
      method: "OPTIONS",
      headers: { origin: "http://evil.example", "access-control-request-method": "POST" },
    });
    expect(preflight.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("PUBLIC_URL's host is allowed", async () => {
    running = await startConsoleApp({ PUBLIC_URL: "https://bot.example.com", OPERATOR_TOKEN: TOKEN });
    const r = await request(running.base, "/api/sessions", { headers: { host: "bot.example.com", authorization: `Bearer ${TOKEN}` } });
    expect(r.status).toBe(200);
    const login = await request(running.base, "/login", {
      method: "POST",
      headers: { host: "bot.example.com", origin: "https://bot.example.com", "content-type": "application/x-www-form-urlencoded" },
      body: `token=${TOKEN}`,
    });
    // Served over https (PUBLIC_URL), the cookie is Secure.
    expect(login.headers["set-cookie"]![0]).toMatch(/; Secure$/);
  });
});

describe("the operator port and /healthz", () => {
  it("OPERATOR_PORT moves the console, API and metrics off the public port", async () => {
    running = await startConsoleApp({ HTTP_HOST: "0.0.0.0", OPERATOR_HOST: "127.0.0.1", OPERATOR_PORT: "0" });
    const op = running.app.http.addressOf("operator")!;
    const opBase = `http://127.0.0.1:${op.port}`;
    const pub = running.base.replace("0.0.0.0", "127.0.0.1");
    const onPublic = {
      sessions: (await request(pub, "/api/sessions")).status,
      metrics: (await request(pub, "/metrics")).status,
      page: (await request(pub, "/")).status,
      login: (await request(pub, "/login")).status,
      healthz: (await request(pub, "/healthz")).status,
    };
    const onOperator = {
      sessions: (await request(opBase, "/api/sessions")).status,
      metrics: (await request(opBase, "/metrics")).status,
      page: (await request(opBase, "/")).status,
      healthz: (await request(opBase, "/healthz")).status,
    };
    expect(onPublic).toEqual({ sessions: 404, metrics: 404, page: 404, login: 404, healthz: 200 });
    expect(onOperator).toEqual({ sessions: 200, metrics: 200, page: 200, healthz: 200 });
  });

  it("the public /healthz is a status only; with a token configured, details need it (loopback alone is not enough)", async () => {
    running = await startConsoleApp({ OPERATOR_TOKEN: TOKEN, PUBLIC_URL: "https://bot.example.com" });
    const viaProxy = JSON.parse((await request(running.base, "/healthz", { headers: { host: "bot.example.com" } })).body);
    const withToken = JSON.parse((await request(running.base, "/healthz", { headers: { host: "bot.example.com", authorization: `Bearer ${TOKEN}` } })).body);
    const loopback = JSON.parse((await request(running.base, "/healthz")).body);
    expect(viaProxy).toEqual({ status: "ok" });
    expect(withToken).toMatchObject({ status: "ok", ready: true, adapters: [{ platform: "console" }], store: { provider: "sqlite" } });
    expect(loopback).toEqual({ status: "ok" });
    running.adapter.stop();
    const down = await request(running.base, "/healthz?ready=1", { headers: { host: "bot.example.com" } });
    expect(down.status).toBe(503);
    expect(JSON.parse(down.body)).toEqual({ status: "not ready" });
  });
});

/** Raw TCP: writes the whole request, then reads what comes back. */
function rawExchange(port: number, head: string, body: Buffer, o: { chunked?: boolean } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1");
    let out = "";
    const timer = setTimeout(() => {
      s.destroy();
      resolve(out);
    }, 15_000);
    s.on("data", (d) => {
      out += d.toString("latin1");
      const m = /content-length: (\d+)\r\n/i.exec(out);
      const at = out.indexOf("\r\n\r\n");
      if (m && at >= 0 && out.length >= at + 4 + Number(m[1])) {
        clearTimeout(timer);
        s.destroy();
        resolve(out);
      }
    });
    s.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    s.write(head);
    if (o.chunked) {
      for (let i = 0; i < body.length; i += 64 * 1024) {
        const part = body.subarray(i, i + 64 * 1024);
        s.write(`${part.length.toString(16)}\r\n`);
        s.write(part);
        s.write("\r\n");
      }
      s.write("0\r\n\r\n");
    } else s.write(body);
  });
}

describe("bounds the client can read", () => {
  it("an oversize body gets a 413 that the client reads, declared or chunked; nothing is stored", async () => {
    running = await startConsoleApp();
    const port = Number(new URL(running.base).port);
    const body = Buffer.from(consoleMessage("x".repeat(1_900_000)));
    const declared = await rawExchange(
      port,
      `POST /api/console/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      body,
    );
    const chunked = await rawExchange(
      port,
      `POST /api/console/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
      body,
      { chunked: true },
    );
    for (const answer of [declared, chunked]) {
      expect(answer).toMatch(/^HTTP\/1\.1 413 /);
      expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4))).toMatchObject({
        error: expect.stringMatching(/^request body over \d+ bytes$/),
        requestId: expect.any(String),
      });
    }
    // fetch (undici) reads it too.
    const viaFetch = await fetch(`${running.base}/api/console/messages`, { method: "POST", headers: { "content-type": "application/json" }, body });
    expect(viaFetch.status).toBe(413);
    expect(await prisma(running.app.db).read((c) => c.inboundEvent.count())).toBe(0);
    const metrics = await (await fetch(`${running.base}/metrics`)).text();
    expect(metrics).toMatch(/^switchboard_http_refused_total\{reason="body-too-large"\} 3$/m);
  });

  it("a 1.9 MB console post within the body limit stores no more than MAX_INBOUND_CHARS, and the reply says the real length", async () => {
    running = await startConsoleApp({ MAX_INBOUND_CHARS: "500000" });
    const text = "y".repeat(1_900_000);
    const r = await fetch(`${running.base}/api/console/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: consoleMessage(text),
    });
    expect(r.status).toBe(202);
    const reply = await eventually(async () => running!.adapter.history("dm:alice").find((m) => m.from === "bot")?.text, "the too-long reply");
    expect(reply).toMatch(/too long \(1900000 characters; the limit is 500000\)/);
    const rows = await prisma(running.app.db).read((c) => c.inboundEvent.findMany());
    expect(rows).toHaveLength(1);
    const stored = JSON.parse(rows[0]!.envelope) as { text: string; textLength: number };
    console.log(
      `console post: sent ${text.length} characters, stored ${stored.text.length} (envelope ${rows[0]!.envelope.length} bytes), textLength ${stored.textLength}`,
    );
    expect(stored.text.length).toBe(500_000);
    expect(stored.textLength).toBe(1_900_000);
    expect(rows[0]!.envelope.length).toBeLessThan(500_000 + 2_000);
  });
});

describe("routing and errors", () => {
  it("HEAD answers for GET routes, other methods get 405 with Allow, bad URLs and encodings a JSON 404, a failing handler a JSON 500", async () => {
    running = await startConsoleApp();
    const head = await request(running.base, "/api/sessions", { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.body).toBe("");
    const put = await request(running.base, "/api/sessions", { method: "PUT" });
    expect(put.status).toBe(405);
    expect(put.headers.allow).toBe("GET, HEAD");
    for (const p of ["//[", "/api/sessions/%", "/api/sessions/%E0%A4%A"]) {
      const r = await request(running.base, p);
      expect(r.status).toBe(404);
      expect(JSON.parse(r.body)).toMatchObject({ error: expect.any(String) });
    }
    running.app.http.route("GET", "/test/throws", async () => {
      throw new Error("boom");
    });
    const boom = await request(running.base, "/test/throws");
    expect(boom.status).toBe(500);
    const parsed = JSON.parse(boom.body) as { error: string; requestId: string };
    expect(parsed.error).toBe("internal error");
    expect(boom.headers["x-request-id"]).toBe(parsed.requestId);
    expect(await (await fetch(`${running.base}/metrics`)).text()).toMatch(/^switchboard_http_errors_total 1$/m);
  });
});

describe("retention", () => {
  it("prunes handled inbound and settled delivery rows older than RECORD_RETENTION, in small batches; keeps new and unhandled ones", async () => {
    running = await startConsoleApp({ RECORD_RETENTION: "7d" });
    const db = running.app.db;
    const inbound = new InboundStore(db);
    const deliveries = new DeliveryStore(db);
    const old = new Date(Date.now() - 8 * 86_400_000);
    for (let i = 0; i < 7; i++) {
      const rec = await inbound.record({ platform: "p", botId: "b", eventId: `old-${i}`, envelope: "{}", occurredAt: old, status: "done" });
      expect(rec).not.toBe("duplicate");
    }
    await inbound.record({ platform: "p", botId: "b", eventId: "old-unhandled", envelope: "{}", occurredAt: old });
    await inbound.record({ platform: "p", botId: "b", eventId: "new", envelope: "{}", occurredAt: new Date(), status: "done" });
    await db.exec("age", db.q.updateTable("InboundEvent").set({ receivedAt: old }).where("eventId", "like", "old-%"));
    await prisma(db).write((c) =>
      c.outboundDelivery.createMany({
        data: [
          ...Array.from({ length: 5 }, (_, i) => ({
            id: `d-old-${i}`,
            sessionId: "s",
            platform: "p",
            botId: "b",
            address: "{}",
            text: "t",
            status: "sent",
            createdAt: old,
            expiresAt: old,
          })),
          { id: "d-old-pending", sessionId: "s", platform: "p", botId: "b", address: "{}", text: "t", status: "pending", createdAt: old, expiresAt: old },
          { id: "d-new", sessionId: "s", platform: "p", botId: "b", address: "{}", text: "t", status: "sent", createdAt: new Date(), expiresAt: new Date() },
        ],
      }),
    );
    const batches: number[] = [];
    const counting = (s: { prune(before: Date, limit: number): Promise<number> }) => ({
      prune: async (b: Date, l: number) => {
        const n = await s.prune(b, l);
        batches.push(n);
        return n;
      },
    });
    const retention = new Retention({
      retentionMs: loadConfig({ RECORD_RETENTION: "7d" }).RECORD_RETENTION,
      tables: { inbound: counting(inbound), delivery: counting(deliveries) },
      log: silentLogger,
      metrics: running.app.metrics,
      batch: 2,
    });
    const pruned = await retention.sweep();
    console.log(`retention: pruned ${pruned} rows in batches ${JSON.stringify(batches)}`);
    expect(pruned).toBe(12);
    expect(Math.max(...batches)).toBeLessThanOrEqual(2);
    const left = (await prisma(db).read((c) => c.inboundEvent.findMany({ select: { eventId: true } }))).map((r) => r.eventId).sort();
    const leftDeliveries = (await prisma(db).read((c) => c.outboundDelivery.findMany({ select: { id: true } }))).map((r) => r.id).sort();
    expect(left).toEqual(["new", "old-unhandled"]);
    expect(leftDeliveries).toEqual(["d-new", "d-old-pending"]);
    expect(await (await fetch(`${running.base}/metrics`)).text()).toMatch(/^switchboard_records_pruned_total\{table="inbound"\} 7$/m);
    expect(running.app.config.RECORD_RETENTION).toBe(7 * 86_400_000);
  });
});
