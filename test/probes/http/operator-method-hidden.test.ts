/**
 * Probe: a wrong method on an operator route. An unknown path answers 404,
 * but Hono's method-not-allowed answered a PUT on an operator path 405 with
 * Allow, before any operator check: a stranger could map the operator
 * surface (console, /api/*, /metrics) by its 405s. To a caller who has not
 * passed the operator check, every operator route with a wrong method must
 * answer exactly as a path nobody mounted does; an operator still gets 405.
 *
 * The routes come from the server's own list (every route the console app
 * mounts), not from a list written here.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startConsoleApp, type ConsoleApp } from "../../console/app.js";
import { request, type Answer } from "../../gateway/http-request.js";

let running: ConsoleApp | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

const TOKEN = "operator-token-0123456789abcdef";
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
/** Headers that differ between any two answers (the request id, the date). */
const VARYING = new Set(["date", "x-request-id", "connection", "keep-alive"]);

/** A concrete path for a route pattern: each parameter and wildcard filled in. */
const concrete = (pattern: string) => pattern.replace(/:[A-Za-z_]\w*(\{[^}]*\})?/g, "x1").replace(/\*/g, "x1");

/** What tells one answer from another, the request id taken out. */
const shape = (a: Answer) => ({
  status: a.status,
  headers: Object.fromEntries(Object.entries(a.headers).filter(([k]) => !VARYING.has(k))),
  body: a.body.replace(/"requestId":"[^"]*"/, '"requestId":"…"'),
});

/** The operator routes' paths, each with the methods nobody mounted there (HEAD goes with GET). */
function wrongMethods(app: ConsoleApp): Map<string, string[]> {
  const mounted = new Map<string, Set<string>>();
  for (const r of app.app.http.routes) {
    const m = mounted.get(r.path) ?? new Set<string>();
    m.add(r.method);
    if (r.method === "GET") m.add("HEAD");
    mounted.set(r.path, m);
  }
  const out = new Map<string, string[]>();
  for (const r of app.app.http.routes) {
    if (r.access !== "operator") continue;
    const all = mounted.get(r.path)!;
    out.set(
      r.path,
      METHODS.filter((m) => !all.has(m)),
    );
  }
  return out;
}

describe("a wrong method on an operator route", () => {
  it("answers a stranger exactly as an unknown path does, on every operator route; an operator gets 405 with Allow", async () => {
    running = await startConsoleApp({ OPERATOR_TOKEN: TOKEN });
    const base = running.base;
    const targets = wrongMethods(running);
    expect(targets.size).toBeGreaterThan(5);
    const stranger = { host: "127.0.0.1" };
    const unknown = new Map<string, ReturnType<typeof shape>>();
    for (const method of METHODS) unknown.set(method, shape(await request(base, "/no-such-route-anywhere", { method, headers: stranger })));
    expect(unknown.get("PUT")!.status).toBe(404);

    const told: string[] = [];
    let probed = 0;
    for (const [pattern, methods] of targets) {
      const path = concrete(pattern);
      for (const method of methods) {
        probed++;
        const seen = shape(await request(base, path, { method, headers: stranger }));
        if (JSON.stringify(seen) !== JSON.stringify(unknown.get(method))) told.push(`${method} ${pattern}: ${seen.status} ${JSON.stringify(seen.headers)}`);
      }
    }
    expect(probed).toBeGreaterThan(10);
    console.log(`wrong methods probed: ${probed} on ${targets.size} operator paths`);
    expect(told).toEqual([]);

    // The operator, signed in, is still told which methods a route takes.
    const [pattern, wrong] = [...targets].find(([, m]) => m.includes("PUT"))!;
    const asOperator = await request(base, concrete(pattern), { method: "PUT", headers: { ...stranger, authorization: `Bearer ${TOKEN}` } });
    expect(asOperator.status).toBe(405);
    expect(String(asOperator.headers.allow).split(", ").sort()).toEqual(METHODS.filter((m) => !wrong.includes(m)).sort());
  });

  it("a public route still answers 405 with Allow to anyone (its existence is no secret)", async () => {
    running = await startConsoleApp({ OPERATOR_TOKEN: TOKEN });
    const put = await request(running.base, "/healthz", { method: "PUT", headers: { host: "127.0.0.1" } });
    expect(put.status).toBe(405);
    expect(put.headers.allow).toBe("GET, HEAD");
  });
});
