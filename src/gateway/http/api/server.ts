import { createRoute, OpenAPIHono, type Hook, type z } from "@hono/zod-openapi";
import type { Env, MiddlewareHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { Logger } from "../../../log.js";
import { errInfo } from "../../../log.js";
import { namedIssue } from "../../../validation-message.js";
import type { HttpHandler, HttpRequest, HttpResponse, RouteOptions } from "../../adapter.js";
import { ErrorBody, OpenApiDocument, withSharedRefusals } from "./openapi.js";
import type { Scope } from "../../../config/api-tokens.js";
import { ALL_SCOPES, type ApiPrincipal, type ApiTokens } from "./tokens.js";
import { forwardedByProxy, originMatchesHost } from "../operator-auth.js";

export type ApiEnv = { Variables: { principal: ApiPrincipal } };
export type ApiApp = OpenAPIHono<ApiEnv>;

export const API_BASE = "/api/v1";
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
export type ApiMethod = (typeof METHODS)[number];

/** How the API reaches the HTTP edge: the server's mount (Host check only; the API authenticates its own callers). */
export type EdgeMount = (method: ApiMethod, path: string, handler: HttpHandler, opts: RouteOptions) => void;

export interface ApiServerOptions {
  tokens: ApiTokens;
  log: Logger;
  /** Counts a refused request by reason (switchboard_http_refused_total). */
  refused?: (reason: string) => void;
  onError?: () => void;
}

/** Validation failures answer 400 with the first problem named (field path and message). */
export const validationHook: Hook<unknown, ApiEnv, string, unknown> = (result, c) => {
  if (result.success) return;
  const issues = result.error.issues.slice(0, 10).map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
  // The first problem, with a union's closest branch and a misspelt field named (src/validation-message.ts).
  const first = namedIssue(result.error.issues);
  return c.json({ error: first ? `invalid request: ${first.path || "body"}: ${first.message}` : "invalid request", issues }, 400);
};

/** A sub-app for the API (for a module's routes, mounted with ApiServer.mount). */
export function apiApp(): ApiApp {
  return new OpenAPIHono<ApiEnv>({ defaultHook: validationHook });
}

/** Middleware: the caller must hold `scope`. */
export function requireScope(scope: Scope): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    if (!c.get("principal").scopes.has(scope))
      return c.json({ error: `this token lacks the "${scope}" scope: add it to the token's entry in API_TOKENS` }, 403);
    await next();
  };
}

/**
 * The HTTP API v1: an OpenAPIHono app whose routes are described by zod
 * schemas (the OpenAPI document at /api/v1/openapi.json is generated from
 * them). It sits behind the gateway's HTTP edge (body limits while
 * streaming, timeouts, connection caps, the Host allowlist, the operator
 * listener split) and authenticates its own callers: OPERATOR_TOKEN (every
 * scope) or a token of API_TOKENS (its scopes), compared in constant time.
 * With neither configured, loopback requests are let in (as the console is).
 */
export class ApiServer {
  readonly app: ApiApp = apiApp();
  readonly #o: ApiServerOptions;

  constructor(o: ApiServerOptions) {
    this.#o = o;
    this.app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
      type: "http",
      scheme: "bearer",
      description: "OPERATOR_TOKEN, or a token listed in API_TOKENS",
    });
    this.app.onError((err, c) => {
      if (err instanceof HTTPException && err.status < 500) return c.json({ error: err.message || "bad request" }, err.status);
      this.#o.onError?.();
      this.#o.log.error({ method: c.req.method, path: c.req.path.slice(0, 200), err: errInfo(err) }, "HTTP API handler failed");
      return c.json({ error: "internal error" }, 500);
    });
    this.app.notFound((c) => c.json({ error: "not found: see GET /api/v1/openapi.json" }, 404));
    this.app.use("*", this.#authenticate);
    this.app.openAPIRegistry.register("Error", ErrorBody);
    this.app.openapi(DOCUMENT_ROUTE, (c) => c.json(this.document() as z.infer<typeof OpenApiDocument>, 200));
  }

  #document: Record<string, unknown> | undefined;

  /**
   * The OpenAPI 3.1 document: every mounted route, each with the shared
   * refusals it can get. Built on the first request (every module has mounted
   * its routes by then) and kept.
   */
  document(): Record<string, unknown> {
    this.#document ??= withSharedRefusals(
      this.app.getOpenAPI31Document({ openapi: "3.1.0", info: { title: "Switchboard HTTP API", version: "1" }, security: [{ bearer: [] }] }),
    ) as unknown as Record<string, unknown>;
    return this.#document;
  }

  #authenticate: MiddlewareHandler<ApiEnv> = async (c, next) => {
    const { tokens } = this.#o;
    // No CORS is ever granted; a browser page of another site gets nothing (the token, when there is one, cannot be attached cross-site either).
    const site = c.req.header("sec-fetch-site");
    const origin = c.req.header("origin");
    if ((site !== undefined && site !== "same-origin" && site !== "none") || (origin !== undefined && !originMatchesHost(origin, c.req.header("host")))) {
      this.#o.refused?.("origin");
      return c.json({ error: "cross-origin requests to the API are refused" }, 403);
    }
    let principal: ApiPrincipal | undefined;
    if (tokens.required) principal = tokens.principal(c.req.header("authorization"));
    // Tokenless, the API is this machine's alone: not a request a reverse proxy forwarded (operator-auth.ts).
    else if (!forwardedByProxy(c.req.header())) principal = { name: "local", scopes: ALL_SCOPES };
    if (!principal) {
      this.#o.refused?.("auth");
      return c.json({ error: "send Authorization: Bearer <token> with OPERATOR_TOKEN or a token of API_TOKENS" }, 401, {
        "www-authenticate": 'Bearer realm="switchboard-api"',
      });
    }
    c.set("principal", principal);
    if (!["GET", "HEAD", "DELETE"].includes(c.req.method) && !/^application\/json\s*(;|$)/i.test(c.req.header("content-type") ?? "")) {
      return c.json({ error: "send the body as JSON (Content-Type: application/json)" }, 415);
    }
    await next();
  };

  /**
   * Mounts a module's routes (an OpenAPIHono app built with apiApp()) under
   * /api/v1/<prefix>, for callers holding `scope`. Its routes join the
   * OpenAPI document; define them before mounting.
   */
  mount<E extends Env>(prefix: string, sub: OpenAPIHono<E>, scope: Scope): void {
    const path = `${API_BASE}/${prefix.replace(/^\/+|\/+$/g, "")}`;
    this.app.use(path, requireScope(scope));
    this.app.use(`${path}/*`, requireScope(scope));
    this.app.route(path, sub);
  }

  /** Puts the API on the HTTP edge: every method under /api/v1/, with the given body limit. */
  attach(edge: EdgeMount, maxBodyBytes: number): void {
    const handler: HttpHandler = (req) => this.handle(req);
    // Each request is traced; an authenticated caller's traceparent is continued (src/gateway/http/trace.ts).
    const { tokens } = this.#o;
    const traceCaller = (h: Record<string, string | string[] | undefined>): boolean => {
      const auth = Array.isArray(h.authorization) ? h.authorization[0] : h.authorization;
      return !tokens.required || tokens.principal(auth) !== undefined;
    };
    for (const m of METHODS) {
      edge(m, API_BASE, handler, { maxBodyBytes, trace: "api", traceCaller });
      edge(m, `${API_BASE}/*`, handler, { maxBodyBytes, trace: "api", traceCaller });
    }
  }

  /** One request, as the edge read it, through the API app. */
  async handle(req: HttpRequest): Promise<HttpResponse> {
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
    const qs = req.query.toString();
    const hasBody = req.method !== "GET" && req.method !== "HEAD";
    const res = await this.app.fetch(
      new Request(`http://api.invalid${req.path}${qs ? `?${qs}` : ""}`, { method: req.method, headers, ...(hasBody && { body: new Uint8Array(req.rawBody) }) }),
    );
    const out: Record<string, string> = { "cache-control": "no-store" };
    for (const [k, v] of res.headers) out[k] = v;
    return { status: res.status, headers: out, body: Buffer.from(await res.arrayBuffer()) };
  }
}

const DOCUMENT_ROUTE = createRoute({
  method: "get",
  path: `${API_BASE}/openapi.json`,
  summary: "This document (any valid token)",
  security: [{ bearer: [] }],
  responses: { 200: { content: { "application/json": { schema: OpenApiDocument } }, description: "The OpenAPI 3.1 document of the API" } },
});
