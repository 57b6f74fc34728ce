/**
 * The HTTP API v1 and the inbound hooks as an attacker meets them, over raw
 * TCP against a real `switchboard serve`: malformed requests (bad JSON,
 * invalid UTF-8, broken chunked encoding, wrong content types, odd
 * methods), oversized bodies (declared and streamed), slow bodies trickled
 * past the request timeout, forged and near-miss tokens, forged, stale and
 * unsigned hook deliveries. The process must survive all of it with no
 * unintended 5xx, record nothing for a refused hook, and then serve a
 * genuine API call.
 */
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { signatureHeader } from "../../src/gateway/http/api/signature.js";
import { freshDatabaseUrl } from "../support/db.js";
import { checkedApi } from "../support/openapi-check.js";
import { report } from "./helpers.js";
import { rawRequest, startEdgeGateway, type EdgeGateway } from "./http-edge.js";

const OP = "op-token-for-the-api-attack-0123456789";
const SEND = "a".repeat(48);
const SECRET = "hook-secret-for-the-attack-0123456789abcdef";

// Every answer (the refusals included) is checked against the served OpenAPI document after the file.
const api = checkedApi(OP, "api-attack");

/** The method and target of an attack's request line. */
const requestLine = (chunks: Array<string | Buffer | number>) => {
  const first = chunks.find((c) => typeof c !== "number");
  const m = /^(\S+) (\S+) HTTP/.exec(Buffer.isBuffer(first) ? first.toString("latin1") : String(first ?? ""));
  return m ? { method: m[1]!, target: m[2]! } : undefined;
};

let edge: EdgeGateway | undefined;
afterAll(async () => {
  await edge?.stop();
});

const req = (method: string, path: string, headers: string[], body: string | Buffer = "") => {
  const b = typeof body === "string" ? Buffer.from(body, "latin1") : body;
  return Buffer.concat([
    Buffer.from(
      `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers.map((h) => `${h}\r\n`).join("")}${b.length ? `Content-Length: ${b.length}\r\n` : ""}Connection: close\r\n\r\n`,
      "latin1",
    ),
    b,
  ]);
};

describe("HTTP API and hooks under attack, over raw TCP", () => {
  it("refuses malformed, oversized, slow and forged requests, records nothing for them, and still serves a genuine call", async () => {
    const dbUrl = await freshDatabaseUrl("sqlite");
    const hooks = JSON.stringify({ deploys: { secret: SECRET, conversation: { platform: "telegram", chat: "1" }, prompt: "Deploy: {{json.status}}" } });
    edge = await startEdgeGateway({
      DATABASE_URL: dbUrl,
      OPERATOR_TOKEN: OP,
      API_TOKENS: `ci:send+read:${SEND}`,
      HOOKS_CONFIG: hooks,
      HTTP_REQUEST_TIMEOUT: "4s",
      HTTP_HEADERS_TIMEOUT: "2s",
    });
    const port = edge.port;
    const auth = `Authorization: Bearer ${SEND}`;
    const json = "Content-Type: application/json";
    const key = (k: string) => `Idempotency-Key: ${k}`;
    const good = JSON.stringify({ conversation: { platform: "telegram", chat: "1" }, text: "x" });
    const hookBody = '{"status":"ok"}';
    const big = "x".repeat(400_000);
    const attacks: Array<{ kind: string; chunks: Array<string | Buffer | number>; close?: "end" | "destroy"; expect: number[] }> = [
      { kind: "bad-json", chunks: [req("POST", "/api/v1/messages", [auth, json, key("j1")], "{not json")], expect: [400] },
      { kind: "bad-json-deep", chunks: [req("POST", "/api/v1/messages", [auth, json, key("j2")], "[".repeat(100_000))], expect: [400] },
      {
        kind: "wrong-shape",
        chunks: [req("POST", "/api/v1/messages", [auth, json, key("j3")], '{"conversation":{"platform":"irc","chat":"#x"},"text":1}')],
        expect: [400],
      },
      {
        kind: "invalid-utf8",
        chunks: [req("POST", "/api/v1/messages", [auth, json, key("j4")], Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0xc0, 0xaf, 0x22, 0x7d]))],
        expect: [400],
      },
      { kind: "no-key", chunks: [req("POST", "/api/v1/messages", [auth, json], good)], expect: [400] },
      { kind: "bad-key", chunks: [req("POST", "/api/v1/messages", [auth, json, key("a b")], good)], expect: [400] },
      { kind: "text-plain", chunks: [req("POST", "/api/v1/messages", [auth, "Content-Type: text/plain", key("j5")], good)], expect: [415] },
      { kind: "odd-method", chunks: [req("PROPFIND", "/api/v1/messages", [auth])], expect: [400, 404, 405, 501] },
      { kind: "bad-id", chunks: [req("GET", "/api/v1/deliveries/%zz", [auth])], expect: [400, 404] },
      { kind: "not-uuid", chunks: [req("GET", "/api/v1/deliveries/../../etc/passwd", [auth])], expect: [400, 404] },
      {
        kind: "broken-chunked",
        chunks: [
          `POST /api/v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}\r\n${json}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`,
          "zz\r\nabc\r\n0\r\n\r\n",
        ],
        expect: [400],
      },
      {
        kind: "declared-huge",
        chunks: [
          `POST /api/v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}\r\n${json}\r\n${key("h1")}\r\nContent-Length: 99999999\r\nConnection: close\r\n\r\n`,
        ],
        close: "end",
        expect: [413],
      },
      {
        kind: "streamed-huge",
        chunks: [
          `POST /api/v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}\r\n${json}\r\n${key("h2")}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`,
          `${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`,
        ],
        expect: [413],
      },
      {
        kind: "hook-huge",
        chunks: [req("POST", "/hooks/deploys", [json, "Switchboard-Delivery: big", `Switchboard-Signature: ${signatureHeader(SECRET, "big", big)}`], big)],
        expect: [413],
      },
      {
        kind: "slow-body",
        chunks: [
          `POST /api/v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}\r\n${json}\r\n${key("s1")}\r\nContent-Length: 100\r\nConnection: close\r\n\r\n`,
          ...Array.from({ length: 12 }, () => [500, "{"]).flat(),
        ],
        expect: [408],
      },
      { kind: "slow-headers", chunks: ["POST /api/v1/messages HTTP/1.1\r\n", 1500, "Host: 127.0.0.1\r\n", 1500, "X-A: b\r\n", 1500], expect: [408] },
      { kind: "no-token", chunks: [req("POST", "/api/v1/messages", [json, key("t1")], good)], expect: [401] },
      { kind: "wrong-token", chunks: [req("POST", "/api/v1/messages", [`Authorization: Bearer ${"b".repeat(48)}`, json, key("t2")], good)], expect: [401] },
      { kind: "near-token", chunks: [req("POST", "/api/v1/messages", [`Authorization: Bearer ${SEND.slice(0, -1)}`, json, key("t3")], good)], expect: [401] },
      { kind: "long-token", chunks: [req("POST", "/api/v1/messages", [`Authorization: Bearer ${SEND}x`, json, key("t4")], good)], expect: [401] },
      {
        kind: "basic-auth",
        chunks: [req("GET", "/api/v1/openapi.json", [`Authorization: Basic ${Buffer.from(`x:${SEND}`).toString("base64")}`])],
        expect: [401],
      },
      { kind: "two-tokens", chunks: [req("GET", "/api/v1/openapi.json", ["Authorization: Bearer x", `Authorization: Bearer ${SEND}`])], expect: [401] },
      { kind: "cross-origin", chunks: [req("POST", "/api/v1/messages", [auth, json, key("o1"), "Origin: http://evil.example"], good)], expect: [403] },
      {
        kind: "evil-host",
        chunks: [
          Buffer.from(
            `POST /api/v1/messages HTTP/1.1\r\nHost: evil.example\r\n${auth}\r\n${json}\r\n${key("o2")}\r\nContent-Length: ${good.length}\r\nConnection: close\r\n\r\n${good}`,
          ),
        ],
        expect: [403],
      },
      {
        kind: "hook-forged",
        chunks: [
          req(
            "POST",
            "/hooks/deploys",
            [json, "Switchboard-Delivery: f1", `Switchboard-Signature: ${signatureHeader("x".repeat(40), "f1", hookBody)}`],
            hookBody,
          ),
        ],
        expect: [401],
      },
      {
        kind: "hook-stale",
        chunks: [
          req(
            "POST",
            "/hooks/deploys",
            [json, "Switchboard-Delivery: f2", `Switchboard-Signature: ${signatureHeader(SECRET, "f2", hookBody, Date.now() - 3_600_000)}`],
            hookBody,
          ),
        ],
        expect: [401],
      },
      { kind: "hook-unsigned", chunks: [req("POST", "/hooks/deploys", [json, "Switchboard-Delivery: f3"], hookBody)], expect: [401] },
      {
        kind: "hook-bad-id",
        chunks: [
          req("POST", "/hooks/deploys", [json, "Switchboard-Delivery: a/b", `Switchboard-Signature: ${signatureHeader(SECRET, "a/b", hookBody)}`], hookBody),
        ],
        expect: [401],
      },
      {
        kind: "hook-garbage-sig",
        chunks: [req("POST", "/hooks/deploys", [json, "Switchboard-Delivery: f4", `Switchboard-Signature: t=abc,v1=${"z".repeat(64)}`], hookBody)],
        expect: [401],
      },
      {
        kind: "hook-unknown",
        chunks: [req("POST", "/hooks/nope", [json, "Switchboard-Delivery: f5", `Switchboard-Signature: ${signatureHeader(SECRET, "f5", hookBody)}`], hookBody)],
        expect: [404],
      },
    ];
    const rounds = 10;
    const byKind: Record<string, string> = {};
    const wrong: string[] = [];
    let sent = 0;
    for (let round = 0; round < rounds; round++) {
      const results = await Promise.all(
        attacks.map((a) => rawRequest(port, a.chunks, { timeoutMs: 12_000, closeAfterWrite: a.close, untilStatus: true }).then((r) => ({ a, r }))),
      );
      for (const { a, r } of results) {
        sent++;
        byKind[a.kind] = String(r.status ?? r.end);
        if (r.status === undefined || !a.expect.includes(r.status)) wrong.push(`${a.kind}: ${r.status ?? r.end} ${r.text.slice(0, 160)}`);
        const line = requestLine(a.chunks);
        if (line) await api.recordRaw(edge.base, line.method, line.target, r.text);
      }
    }
    expect(edge.g.child.exitCode).toBeNull();
    // A genuine call still works: a known chat (a Telegram DM that spoke first), one delivery with the platform's id.
    const rt = await edge.telegramRoundTrip("hello before the API call");
    const dm = edge.tg.sent()[0]!.chatId;
    const body = JSON.stringify({ conversation: { platform: "telegram", chat: String(dm) }, text: "genuine API message" });
    const genuine = await api.fetch(`${edge.base}/api/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${SEND}`, "content-type": "application/json", "idempotency-key": "genuine-1" },
      body,
    });
    const accepted = (await genuine.json()) as { id: string; status: string };
    let status = accepted.status;
    for (let i = 0; i < 200 && status !== "delivered"; i++) {
      await new Promise((r) => setTimeout(r, 50));
      status = (
        (await (await api.fetch(`${edge.base}/api/v1/deliveries/${accepted.id}`, { headers: { authorization: `Bearer ${SEND}` } })).json()) as {
          status: string;
        }
      ).status;
    }
    const metrics = await (await fetch(`${edge.base}/metrics`, { headers: { authorization: `Bearer ${OP}` } })).text();
    const handlerErrors = Number(/^switchboard_http_errors_total (\d+)/m.exec(metrics)?.[1] ?? NaN);
    const db = new Database(dbUrl.slice("file:".length), { readonly: true });
    const hookRows = (db.prepare(`SELECT COUNT(*) AS n FROM "InboundEvent" WHERE "eventId" LIKE 'hook:%'`).get() as { n: number }).n;
    const apiRows = (db.prepare(`SELECT COUNT(*) AS n FROM "ApiMessage"`).get() as { n: number }).n;
    db.close();
    const crashLines = edge.g.problems.filter((l) => /unhandled|uncaught|"level":(50|60)|"level":"(error|fatal)"/i.test(l));
    report("api-attack", {
      requests: sent,
      kinds: attacks.length,
      wrong: wrong.length,
      byKind,
      handlerErrors,
      hookRows,
      apiRows,
      crashLines: crashLines.length,
      genuine: { status: genuine.status, delivered: status },
      telegramRoundTrip: rt.status,
    });
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(crashLines.slice(0, 5)).toEqual([]);
    expect(handlerErrors).toBe(0);
    expect(hookRows).toBe(0);
    expect(apiRows).toBe(1);
    expect(genuine.status).toBe(202);
    expect(status).toBe("delivered");
  });
});
