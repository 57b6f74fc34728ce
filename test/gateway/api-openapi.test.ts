/**
 * The OpenAPI document lists every status the API sends (issue 26, item 17).
 * Every documented operation is sent the refusals the shared HTTP layer and
 * the API's own checks make (no token, a wrong token, a missing scope, a
 * cross-site request, a Host not served, a body that is not JSON, not sent as
 * JSON, or too large), over real HTTP, and each answer is checked against the
 * served document (test/support/openapi-check.ts, which every API test file
 * uses). And the check itself catches an unlisted status and a wrong body.
 */
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { App } from "../../src/gateway/app.js";
import { startApp } from "../support/app.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { checkedApi, OpenApiChecker, type OpenApiDoc } from "../support/openapi-check.js";

const OP = "operator-token-for-the-document-0123456789";
const SEND = "s".repeat(40);
const api = checkedApi(OP, "api-openapi");

let app: App;
let base: string;
let doc: OpenApiDoc;
beforeAll(async () => {
  const started = await startApp("sqlite", [new MemoryAdapter()], { OPERATOR_TOKEN: OP, API_TOKENS: `ci:send:${SEND}` });
  app = started.app;
  base = started.url.replace("0.0.0.0", "127.0.0.1");
  doc = (await (await api.fetch(`${base}/api/v1/openapi.json`, { headers: { authorization: `Bearer ${OP}` } })).json()) as OpenApiDoc;
});
afterAll(async () => {
  await app?.stop();
});

/** Every operation of the document, with a concrete path (a UUID for each parameter). */
function operations(): Array<{ method: string; path: string; template: string }> {
  const out = [];
  for (const [template, item] of Object.entries(doc.paths))
    for (const method of Object.keys(item).filter((m) => ["get", "post", "put", "patch", "delete"].includes(m)))
      out.push({ method: method.toUpperCase(), template, path: template.replace(/\{[^}]+\}/g, "00000000-0000-4000-8000-000000000000") });
  return out;
}

/** A request whose Host header fetch will not let us set: over node:http, recorded like the others. */
async function withHost(method: string, path: string, host: string): Promise<number> {
  const u = new URL(base);
  const { status, type, body } = await new Promise<{ status: number; type: string | null; body: string }>((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path, headers: { host, authorization: `Bearer ${OP}` } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, type: (res.headers["content-type"] as string | undefined) ?? null, body: text }));
    });
    req.on("error", reject);
    req.end();
  });
  await api.record(u.origin, { method, target: path, status, contentType: type, body });
  return status;
}

describe("the OpenAPI document lists every refusal each route can get", () => {
  it("each documented operation, refused every way the shared layers refuse, answers as documented", async () => {
    const ops = operations();
    expect(ops.map((o) => `${o.method} ${o.template}`)).toEqual(
      expect.arrayContaining(["POST /api/v1/messages", "GET /api/v1/deliveries/{id}", "POST /api/v1/schedules", "DELETE /api/v1/schedules/{id}"]),
    );
    const statuses: Record<string, number[]> = {};
    for (const o of ops) {
      const url = `${base}${o.path}`;
      const body = !["GET", "DELETE"].includes(o.method);
      const send = async (headers: Record<string, string>, payload?: string | Uint8Array) =>
        (await api.fetch(url, { method: o.method, headers, ...(payload !== undefined && { body: payload }) })).status;
      const json = { "content-type": "application/json" };
      const got = [
        await send({ ...json }, body ? "{}" : undefined),
        await send({ ...json, authorization: `Bearer ${"x".repeat(40)}` }, body ? "{}" : undefined),
        await send({ ...json, authorization: `Bearer ${OP}`, origin: "https://evil.example" }, body ? "{}" : undefined),
        await send({ ...json, authorization: `Bearer ${OP}`, "sec-fetch-site": "cross-site" }, body ? "{}" : undefined),
        await withHost(o.method, o.path, "evil.example"),
      ];
      // The send-only token: allowed on /messages, lacking the scope elsewhere (the document itself needs no scope).
      if (!o.template.startsWith("/api/v1/messages") && o.template !== "/api/v1/openapi.json") got.push(await send({ authorization: `Bearer ${SEND}` }));
      if (o.method !== "GET") got.push(await send({ ...json, authorization: `Bearer ${OP}` }, new Uint8Array(400_000)));
      if (body) {
        got.push(await send({ ...json, authorization: `Bearer ${OP}`, "idempotency-key": "k" }, "{not json"));
        got.push(await send({ "content-type": "text/plain", authorization: `Bearer ${OP}`, "idempotency-key": "k" }, "{}"));
        got.push(await send({ ...json, authorization: `Bearer ${OP}`, "idempotency-key": "k" }, '{"unexpected":true}'));
      }
      statuses[`${o.method} ${o.template}`] = got;
    }
    // Parameters that fail their schemas: a query value, and path ids too long or not a UUID.
    const op = { authorization: `Bearer ${OP}` };
    const long = "x".repeat(101);
    statuses.parameters = [
      (await api.fetch(`${base}/api/v1/schedules?all=maybe`, { headers: op })).status,
      (await api.fetch(`${base}/api/v1/schedules/${long}`, { headers: op })).status,
      (await api.fetch(`${base}/api/v1/schedules/${long}`, { method: "DELETE", headers: op })).status,
      (await api.fetch(`${base}/api/v1/deliveries/not-a-uuid`, { headers: op })).status,
    ];
    expect(statuses.parameters).toEqual([400, 400, 400, 400]);
    console.log(`refusals per operation: ${JSON.stringify(statuses)}`);
    const all = new Set(Object.values(statuses).flat());
    for (const s of [400, 401, 403, 413, 415]) expect(all).toContain(s);
    // Every answer is checked against the document in the file's afterAll; here, at once, for a clear failure.
    expect(await api.problems()).toEqual([]);
  });

  it("the check catches a status the document does not list, and a body that does not match", () => {
    const checker = new OpenApiChecker(doc);
    const ok = { method: "GET", target: "/api/v1/schedules", status: 401, contentType: "application/json", body: '{"error":"no token"}' };
    expect(checker.problem(ok)).toBeUndefined();
    expect(checker.problem({ ...ok, status: 418 })).toContain("status not listed");
    expect(checker.problem({ ...ok, target: "/api/v1/schedules/x", status: 404, body: '{"error":{"code":1}}' })).toContain("does not match");
    expect(checker.problem({ ...ok, status: 200, body: '{"schedules":"none"}' })).toContain("does not match");
    expect(checker.problem({ ...ok, contentType: "text/html" })).toContain("content-type");
    expect(checker.problem({ ...ok, target: "/api/v1/nowhere", status: 200 })).toContain("no documented operation");
  });
});
