/**
 * The HTTP edge as an attacker meets it: 10,000 generated requests over raw
 * TCP sockets (invalid URLs and percent-encodings, odd methods, huge and
 * duplicated headers, invalid UTF-8, broken chunked encoding, early closes)
 * against every route of a real `switchboard serve` process. The process
 * must survive all of it (no exit, no unhandled rejection, no 5xx that was
 * not meant), and a genuine Slack event and Telegram update are processed
 * afterwards.
 */
import { afterAll, describe, expect, it } from "vitest";
import { slackSignature } from "../fakes/slack.js";
import { report } from "./helpers.js";
import { rawRequest, startEdgeGateway, WEBHOOK_SECRET, type EdgeGateway, type RawResult } from "./http-edge.js";

const REQUESTS = Number(process.env.HTTP_ATTACK_REQUESTS ?? 10_000);
const CONCURRENCY = 40;
/** The whole run is bounded in time too. */
const BUDGET_MS = 150_000;

let edge: EdgeGateway | undefined;
afterAll(async () => {
  await edge?.stop();
});

/** A small seeded PRNG, so a failing run can be replayed. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Attack = { kind: string; chunks: Array<string | Buffer | number>; close?: "end" | "destroy" };

function generator(e: EdgeGateway, seed: number) {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const routes = [
    "/",
    "/console/console.js",
    "/console/console.css",
    "/login",
    "/logout",
    "/healthz",
    "/healthz?ready=1",
    "/metrics",
    "/api/sessions",
    "/api/sessions?archived=1&limit=9999999",
    "/api/sessions/some-id",
    "/api/bindings?channel=x",
    "/api/events",
    "/api/console/messages",
    "/api/console/events",
    "/api/console/history?chatId=console:dm:alice",
    "/api/console/address?type=private&id=alice",
    "/slack/events",
    "/slack/commands",
    e.hookPath,
    "/telegram/0",
    "/nothing/here",
  ];
  const badPaths = [
    "//[",
    "/%",
    "/%zz",
    "/api/sessions/%",
    "/api/sessions/%E0%A4%A",
    "/api/sessions/%00",
    "/..%2f..%2fetc/passwd",
    "/%2e%2e/%2e%2e/",
    "*",
    "http://[::1",
    "http://evil.example/api/sessions",
    "/api/sessions/\u00ff\u00fe",
    `/${"a".repeat(9000)}`,
    "/?a=%&b=%%%",
    "/telegram/%ff",
    "/slack/events?%",
    "/api/console/history?chatId=%E2%82",
    "/\\..\\..\\",
    `/api/sessions/${"%41".repeat(2000)}`,
  ];
  const methods = ["GET", "POST", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PROPFIND", "get", "G3T", "CONNECT", "M-SEARCH", "X".repeat(40)];
  const host = () =>
    pick(["127.0.0.1", `127.0.0.1:${e.port}`, "localhost", "evil.example", "evil.example:8787", "[::1]", "", "a b", "\u00ff\u00fe", "127.0.0.1, evil.example"]);
  const body = () =>
    pick([
      "{}",
      "[]",
      "null",
      '{"chat":{"type":"private"},"sender":{"id":"alice","name":"A"},"text":"hi"}',
      '{"a":',
      "\u0000\u0001\u0002",
      Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x28, 0xa1]).toString("latin1"),
      "payload=%7B%22type%22%3A",
      "x".repeat(Math.floor(rand() * 5000)),
      JSON.stringify({ update_id: Math.floor(rand() * 1e9), message: { text: "x" } }),
      JSON.stringify({ type: "url_verification", challenge: "c" }),
    ]);
  const req = (method: string, path: string, headers: string[], b = ""): string =>
    `${method} ${path} HTTP/1.1\r\n${headers.map((h) => `${h}\r\n`).join("")}${b ? `Content-Length: ${Buffer.byteLength(b, "latin1")}\r\n` : ""}Connection: close\r\n\r\n${b}`;
  const signed = (b: string): string[] => {
    const ts = String(Math.floor(Date.now() / 1000));
    return [`X-Slack-Request-Timestamp: ${ts}`, `X-Slack-Signature: ${slackSignature(e.sl.signingSecret, ts, b)}`];
  };
  const kinds: Array<() => Attack> = [
    () => ({ kind: "bad-url", chunks: [req(pick(["GET", "POST", "HEAD"]), pick(badPaths), [`Host: ${host()}`])] }),
    () => ({ kind: "odd-method", chunks: [req(pick(methods), pick(routes), [`Host: 127.0.0.1`])] }),
    () => ({ kind: "huge-header", chunks: [req("GET", pick(routes), ["Host: 127.0.0.1", `X-Big: ${"h".repeat(8_000 + Math.floor(rand() * 40_000))}`])] }),
    () => ({
      kind: "many-headers",
      chunks: [req("GET", pick(routes), ["Host: 127.0.0.1", ...Array.from({ length: 100 + Math.floor(rand() * 2000) }, (_, i) => `X-H${i}: ${i}`)])],
    }),
    () => ({
      kind: "duplicate-headers",
      chunks: [
        req(
          "POST",
          pick(routes),
          pick([
            ["Host: 127.0.0.1", "Host: evil.example"],
            ["Host: 127.0.0.1", "Content-Length: 5", "Content-Length: 7"],
            ["Host: 127.0.0.1", `X-Telegram-Bot-Api-Secret-Token: ${WEBHOOK_SECRET}`, "X-Telegram-Bot-Api-Secret-Token: x"],
            ["Host: 127.0.0.1", "Authorization: Bearer a", "Authorization: Bearer b"],
            ["Host: 127.0.0.1", "Origin: http://127.0.0.1", "Origin: http://evil.example", "Content-Type: application/json"],
            ["Host: 127.0.0.1", "X-Slack-Signature: v0=00", "X-Slack-Signature: v0=11", "X-Slack-Request-Timestamp: 1"],
            ["Host: 127.0.0.1", "Cookie: switchboard_operator=a", "Cookie: switchboard_operator=b"],
          ]),
          body(),
        ),
      ],
    }),
    () => ({
      kind: "invalid-utf8",
      chunks: [
        Buffer.concat([
          Buffer.from(`POST ${pick(routes)} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Name: `),
          Buffer.from([0xc3, 0x28, 0xff, 0xfe]),
          Buffer.from(`\r\nContent-Type: application/json\r\nContent-Length: 6\r\nConnection: close\r\n\r\n`),
          Buffer.from([0x22, 0xff, 0xfe, 0xc0, 0xaf, 0x22]),
        ]),
      ],
    }),
    () => {
      const path = pick(["/slack/events", e.hookPath, "/api/console/messages", "/login", "/nothing"]);
      const head = `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n${path === e.hookPath ? `X-Telegram-Bot-Api-Secret-Token: ${WEBHOOK_SECRET}\r\n` : ""}Connection: close\r\n\r\n`;
      const broken = pick([
        "zz\r\nabc\r\n0\r\n\r\n",
        "5\r\nab",
        "ffffffffffffffff\r\n",
        "3\r\nabcdef\r\n",
        "-1\r\n",
        "2;ext=\u00ff\r\nab\r\n0\r\n\r\n",
        "0\r\nTrailer: \u0000\r\n\r\n",
        "4\nabcd\n0\n\n",
      ]);
      return { kind: "broken-chunked", chunks: [head, broken], close: pick(["end", "destroy", undefined] as const) };
    },
    () => ({
      kind: "te-and-cl",
      chunks: [
        `POST ${pick(routes)} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n4\r\nabcd\r\n0\r\n\r\n`,
      ],
    }),
    () => {
      const full = req("POST", pick(routes), ["Host: 127.0.0.1", "Content-Type: application/json"], body() + "x".repeat(100));
      const cut = Math.floor(rand() * full.length);
      return { kind: "early-close", chunks: [full.slice(0, cut)], close: pick(["end", "destroy"] as const) };
    },
    () => ({
      kind: "short-body",
      chunks: [`POST ${pick(routes)} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n{"partial":`],
      close: "end",
    }),
    () => ({
      kind: "huge-declared",
      chunks: [
        `POST ${pick(routes)} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${pick(["99999999999", "1e9", "-1", "0x10", "18446744073709551616"])}\r\nConnection: close\r\n\r\n`,
      ],
      close: "end",
    }),
    () => ({
      kind: "no-host",
      chunks: [
        pick([
          `GET ${pick(routes)} HTTP/1.1\r\nConnection: close\r\n\r\n`,
          `GET ${pick(routes)} HTTP/1.0\r\n\r\n`,
          `GET ${pick(routes)}\r\n\r\n`,
          `GET ${pick(routes)} HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n`,
          `GET ${pick(routes)} HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n`,
        ]),
      ],
      close: "end",
    }),
    () => ({ kind: "garbage", chunks: [Buffer.from(Array.from({ length: 1 + Math.floor(rand() * 3000) }, () => Math.floor(rand() * 256)))], close: "end" }),
    () => {
      const b = pick([
        body(),
        "{not json",
        `{"type":"event_callback","event":{"type":"message","text":${'"x"'.repeat(3)}}}`,
        '{"type":"event_callback","event_id":1,"event":null}',
      ]);
      return {
        kind: "signed-slack-junk",
        chunks: [
          req(
            "POST",
            pick(["/slack/events", "/slack/commands"]),
            [
              "Host: 127.0.0.1",
              pick(["Content-Type: application/json", "Content-Type: application/x-www-form-urlencoded", "Content-Type: text/\u00ff"]),
              ...signed(b),
            ],
            b,
          ),
        ],
      };
    },
    () => {
      const b = pick([
        body(),
        "{}",
        '{"update_id":"x"}',
        '{"update_id":1,"message":{"chat":null}}',
        '{"update_id":2,"message":{"message_id":1,"date":"x","chat":{"id":"y","type":"weird"},"text":[1]}}',
      ]);
      return {
        kind: "telegram-junk",
        chunks: [req("POST", e.hookPath, ["Host: 127.0.0.1", "Content-Type: application/json", `X-Telegram-Bot-Api-Secret-Token: ${WEBHOOK_SECRET}`], b)],
      };
    },
    () => ({
      kind: "operator-forged",
      chunks: [
        req(
          pick(["GET", "POST"]),
          pick(routes.filter((r) => r.startsWith("/api") || r === "/metrics" || r === "/")),
          [
            `Host: ${host()}`,
            pick([
              "Authorization: Bearer wrong",
              "Authorization: Basic eDp5",
              "Cookie: switchboard_operator=forged",
              "Origin: null",
              "Origin: http://evil.example",
              "Sec-Fetch-Site: cross-site",
            ]),
            "Content-Type: application/json",
          ],
          body(),
        ),
      ],
    }),
    () => ({
      kind: "pipelined",
      chunks: [
        `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n${pick(["GET //[ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}", "\u00ff\u00fe\r\n\r\n"])}GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
      ],
    }),
  ];
  return () => pick(kinds)();
}

describe("HTTP attack suite over raw TCP", () => {
  it(`survives ${REQUESTS} generated malformed requests against every route, then serves genuine webhooks`, async () => {
    edge = await startEdgeGateway({ CONSOLE_ENABLED: "true" });
    const next = generator(edge, 13);
    const byKind: Record<string, number> = {};
    const byStatus: Record<string, number> = {};
    const fiveXX: Array<{ kind: string; head: string }> = [];
    const ends: Record<RawResult["end"], number> = { closed: 0, reset: 0, timeout: 0 };
    const deadline = Date.now() + BUDGET_MS;
    let sent = 0;
    const t0 = Date.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (sent < REQUESTS && Date.now() < deadline) {
          sent++;
          const a = next();
          byKind[a.kind] = (byKind[a.kind] ?? 0) + 1;
          const r = await rawRequest(edge!.port, a.chunks, { timeoutMs: 4_000, closeAfterWrite: a.close, untilStatus: true });
          ends[r.end]++;
          const key = r.status === undefined ? "none" : String(r.status);
          byStatus[key] = (byStatus[key] ?? 0) + 1;
          if (r.status !== undefined && r.status >= 500) fiveXX.push({ kind: a.kind, head: r.text.slice(0, 300) });
        }
      }),
    );
    const attackMs = Date.now() - t0;
    // The process is alive and answering.
    expect(edge.g.child.exitCode).toBeNull();
    expect((await fetch(`${edge.base}/healthz`)).status).toBe(200);
    const slack = await edge.slackRoundTrip("genuine slack after the attack");
    const telegram = await edge.telegramRoundTrip("genuine telegram after the attack");
    const metrics = await (await fetch(`${edge.base}/metrics`)).text();
    const handlerErrors = Number(/^switchboard_http_errors_total (\d+)/m.exec(metrics)?.[1] ?? NaN);
    const refused = [...metrics.matchAll(/^switchboard_http_refused_total\{reason="([^"]+)"\} (\d+)/gm)].map((m) => `${m[1]}=${m[2]}`).join(" ");
    const crashLines = edge.g.problems.filter((l) => /unhandled|uncaught|"level":(50|60)|"level":"(error|fatal)"/i.test(l));
    report("http-attack", {
      requests: sent,
      attackMs,
      byStatus,
      ends,
      kinds: Object.keys(byKind).length,
      fiveXX: fiveXX.length,
      handlerErrors,
      crashLines: crashLines.length,
      exited: edge.g.child.exitCode !== null,
      refused,
      slack,
      telegram,
    });
    expect(sent).toBe(REQUESTS);
    expect(fiveXX.slice(0, 3).map((f) => `${f.kind}: ${f.head}`)).toEqual([]);
    expect(crashLines.slice(0, 5)).toEqual([]);
    expect(handlerErrors).toBe(0);
    expect(slack.status).toBe(200);
    expect(telegram.status).toBe(200);
    // Every kind was tried many times, and most requests were answered with a status (not just dropped).
    expect(Object.values(byKind).every((n) => n > REQUESTS / 40)).toBe(true);
    expect(byStatus["400"]).toBeGreaterThan(REQUESTS / 20);
    expect(byStatus["403"]).toBeGreaterThan(0);
    expect(byStatus["431"]).toBeGreaterThan(0);
  });
});
