import type { Context } from "hono";
import { errInfo } from "../../log.js";
import type { HttpRequest, HttpResponse } from "../adapter.js";
import { readBody } from "./body.js";
import { eventStreamResponse } from "./event-stream.js";
import { JSON_TYPE, starting } from "./answers.js";
import type { RequestFacts } from "./operator-auth.js";
import type { Edge, Env, Route } from "./routes.js";

/**
 * One request to a mounted route, from the checks to the handler's answer:
 * for a route that is not public, the 503 while the gateway starts, the Host
 * allowlist and (operator routes) the operator check; then the route's
 * precheck on the headers, the body read within its limit and the shared
 * budget, and the handler.
 */
export async function serveRoute(edge: Edge, c: Context<Env>, r: Route): Promise<Response> {
  const incoming = c.env.incoming;
  const url = new URL(c.req.url);
  const facts = requestFacts(c, url);
  let byToken = false;
  if (r.access !== "public") {
    if (edge.starting) return answer(c, starting());
    if (!edge.auth.hostAllowed(single(incoming.headers.host)) || !edge.auth.hostAllowed(facts.urlHost)) {
      edge.refusals.refuse("host", { host: String(incoming.headers.host ?? "").slice(0, 100), path: safePath(c) });
      return errorAnswer(c, 403, "this host name is not allowed for the operator pages: use 127.0.0.1 or localhost, or set PUBLIC_URL to the address you open");
    }
    if (r.access === "operator") {
      const v = await edge.auth.check(facts);
      if (!v.ok) {
        edge.refusals.refuse(v.reason, { path: safePath(c) });
        if (v.reason === "auth" && r.method === "GET" && /text\/html/.test(String(incoming.headers.accept ?? ""))) {
          return new Response(null, { status: 303, headers: { location: `/login?next=${encodeURIComponent(c.req.path)}`, "cache-control": "no-store" } });
        }
        return errorAnswer(c, v.status, v.error, v.status === 401 ? { "www-authenticate": 'Bearer realm="switchboard"' } : {});
      }
      byToken = v.by === "token";
    }
  }
  const request: HttpRequest = {
    method: c.req.method,
    path: c.req.path,
    headers: incoming.headers,
    rawBody: EMPTY,
    query: url.searchParams,
    params: c.req.param() as Record<string, string>,
    // Checked once: an operator route's verdict already read the login session.
    operator: byToken || (await isOperator(edge, facts, c)),
    remoteAddress: facts.remoteAddress,
  };
  const early = r.opts.precheck?.(request);
  if (early) {
    edge.refusals.refuse("precheck", { path: safePath(c), status: early.status });
    return answer(c, early);
  }
  if (r.method !== "GET") {
    const limit = r.opts.maxBodyBytes ?? edge.limits.defaultMaxBodyBytes;
    const body = await readBody(incoming, limit, edge.budget);
    if (!body.ok) {
      if (body.reason === "aborted") return errorAnswer(c, 400, "the request body ended early");
      edge.refusals.refuse(body.reason === "too-large" ? "body-too-large" : "body-budget", { path: safePath(c), limit, received: body.received });
      return body.reason === "too-large"
        ? errorAnswer(c, 413, `request body over ${limit} bytes`)
        : errorAnswer(c, 503, "too many request bodies in flight; retry shortly", { "retry-after": "1" });
    }
    request.rawBody = body.body;
  }
  // An operator's answer (sessions, transcripts, usage, metrics) is kept by no cache, the browser's included, and
  // read as nothing but its declared type, unless its route says otherwise.
  return answer(c, await r.handler(request), r.access === "public" ? {} : { "cache-control": "no-store", "x-content-type-options": "nosniff" });
}

/** What the operator check reads of a request: its method, headers, target host and socket address. */
export function requestFacts(c: Context<Env>, url = new URL(c.req.url)): RequestFacts {
  const incoming = c.env.incoming;
  return { method: c.req.method, headers: incoming.headers, urlHost: url.host, remoteAddress: incoming.socket?.remoteAddress };
}

/** For a public route (/healthz's details): a store that cannot say whether a login session is live makes the caller a stranger, reported, not a 500. */
async function isOperator(edge: Edge, facts: RequestFacts, c: Context<Env>): Promise<boolean> {
  try {
    return await edge.auth.isOperator(facts);
  } catch (err) {
    edge.metrics?.httpErrors.inc();
    edge.log.warn({ requestId: c.get("requestId"), path: safePath(c), err: errInfo(err) }, "checking the login session failed; answering as to a stranger");
    return false;
  }
}

/** A handler's answer as a Response: the request id added, `defaults` under its own headers, an event stream streamed. */
export function answer(c: Context<Env>, r: HttpResponse, defaults: Record<string, string> = {}): Response {
  const headers = { ...defaults, "x-request-id": c.get("requestId"), ...r.headers };
  if (!r.stream) return new Response(r.status === 204 || r.status === 304 ? null : (r.body ?? null), { status: r.status, headers });
  return eventStreamResponse(c.env.outgoing, r.status, r.stream, headers);
}

/** The edge's own JSON error, with the request id, kept by no cache. */
export function errorAnswer(c: Context<Env>, status: number, error: string, headers: Record<string, string> = {}): Response {
  const id = c.get("requestId");
  return new Response(JSON.stringify({ error, requestId: id }), {
    status,
    headers: { "content-type": JSON_TYPE, "x-request-id": id, "cache-control": "no-store", ...headers },
  });
}

const EMPTY = Buffer.alloc(0);

const single = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? undefined : v);

/** The path for a log line, cut short (it is attacker-controlled). */
export const safePath = (c: Context<Env>): string => c.req.path.slice(0, 200);
