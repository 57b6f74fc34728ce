import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { getRequestListener, type HttpBindings } from "@hono/node-server";
import { Hono, type Context } from "hono";
import { methodNotAllowed } from "hono/method-not-allowed";
import { requestId, type RequestIdVariables } from "hono/request-id";
import { TrieRouter } from "hono/router/trie-router";
import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import type { HttpHandler, HttpRequest, HttpResponse, RouteOptions } from "../adapter.js";
import { servedInSpan } from "./trace.js";
import { BodyBudget, readBody } from "./body.js";
import { RefusalLog } from "./refusals.js";
import { answerClientError, lastResort } from "./client-errors.js";
import { eventStreamResponse } from "./event-stream.js";
import type { GatewayMetrics } from "../metrics.js";
import { OperatorAuth, type RequestFacts } from "./operator-auth.js";
import { JSON_TYPE, starting } from "./answers.js";
import { DEFAULT_LIMITS, type HttpLimits } from "./limits.js";

export { json, unavailable } from "./answers.js";
export { DEFAULT_LIMITS, type HttpLimits } from "./limits.js";

export type { RouteOptions } from "../adapter.js";

export interface HttpServerOptions {
  log: Logger;
  metrics?: GatewayMetrics;
  /** Who may use the operator routes. Default: no token, loopback hosts only. */
  auth?: OperatorAuth;
  limits?: Partial<HttpLimits>;
}

/** Which routes a listener serves: "all" (the one port), or split between a public and an operator port. */
export type ListenerRole = "all" | "public" | "operator";
type Access = "public" | "operator" | "login";
/** Methods a route may be mounted for (the HTTP API uses more than webhooks do). */
export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

interface Route {
  method: HttpMethod;
  path: string;
  handler: HttpHandler;
  access: Access;
  opts: RouteOptions;
}

interface Listener {
  server: http.Server;
  role: ListenerRole;
  sockets: Set<Socket>;
}

type Env = { Bindings: HttpBindings; Variables: RequestIdVariables };

/**
 * The gateway's HTTP edge, on Hono: health, metrics, the console, and the
 * routes adapters mount (Telegram webhooks, Slack events). Every request is
 * answered (JSON errors carry a request id) and none can end the process.
 * Bodies are bounded while they stream (per route, and one budget across
 * connections), connections are capped, and slow senders are cut by the
 * header and request timeouts. Operator routes (anything not mounted
 * `public`) pass the OperatorAuth check first. While the gateway starts
 * (from `starting()` to `ready()`), every route but the public ones
 * answers 503 with Retry-After, and so does a path nobody mounted yet (an
 * adapter mounts its routes as it starts): never a 404 that is not true.
 */
export class HttpServer {
  readonly #routes: Route[] = [];
  readonly #listeners: Listener[] = [];
  readonly #apps = new Map<ListenerRole, Hono<Env>>();
  readonly #limits: HttpLimits;
  readonly #auth: OperatorAuth;
  readonly #refusals: RefusalLog;
  readonly budget: BodyBudget;

  readonly #o: HttpServerOptions;
  #starting = false;

  constructor(o: HttpServerOptions) {
    this.#o = o;
    this.#limits = { ...DEFAULT_LIMITS, ...o.limits };
    this.#auth = o.auth ?? new OperatorAuth({});
    this.#refusals = new RefusalLog(o.log, o.metrics);
    this.budget = new BodyBudget(this.#limits.maxBufferedBytes);
  }

  get auth(): OperatorAuth {
    return this.#auth;
  }

  /** The gateway is starting: routes that are not ready yet answer 503 with Retry-After until ready(). */
  starting(): void {
    this.#starting = true;
  }

  ready(): void {
    this.#starting = false;
  }

  get isStarting(): boolean {
    return this.#starting;
  }

  /** Mounts a route. Routes are operator routes unless `opts.public`. */
  route(method: "GET" | "POST", path: string, handler: HttpHandler, opts: RouteOptions = {}): void {
    this.mount(method, path, handler, opts.public ? "public" : "operator", opts);
  }

  /** Like route(), with the access named: "login" routes pass the Host check but need no token. */
  mount(method: HttpMethod, path: string, handler: HttpHandler, access: Access, opts: RouteOptions = {}): void {
    if (this.#routes.some((r) => r.method === method && r.path === path)) {
      throw new Error(`HTTP route ${method} ${path} is already mounted; each adapter needs its own path.`);
    }
    this.#routes.push({ method, path, handler, access, opts });
    // Hono's router is built on first use: a new route means a new app, built on the next request.
    this.#apps.clear();
  }

  #app(role: ListenerRole): Hono<Env> {
    let app = this.#apps.get(role);
    if (app) return app;
    // A trie, not Hono's default RegExpRouter: the app is rebuilt each time an adapter mounts a route
    // while the gateway starts, and the RegExpRouter compiles every route into one expression on the
    // first request after each rebuild (a /healthz poll during the start paid it once per adapter).
    // The trie has no build step; a match costs about half a microsecond more per request.
    app = new Hono<Env>({ router: new TrieRouter() });
    app.use(requestId({ limitLength: 64 }));
    app.use(
      methodNotAllowed({
        app,
        onMethodNotAllowed: (c, methods) => this.#error(c, 405, `method not allowed: use ${methods.join(", ")}`, { allow: methods.join(", ") }),
      }),
    );
    for (const r of this.#routes) {
      if (role === "public" && r.access !== "public") continue;
      app.on(r.method, r.path, (c) =>
        r.opts.trace
          ? servedInSpan(
              r.opts.trace,
              { method: r.method, route: r.path, path: c.req.path, url: c.req.url, headers: c.env.incoming.headers },
              () => this.#serve(c, r),
              r.opts.traceCaller,
            )
          : this.#serve(c, r),
      );
    }
    app.notFound((c) => (this.#starting ? this.#response(c, starting()) : this.#error(c, 404, "not found")));
    app.onError((err, c) => {
      this.#o.log.error({ requestId: c.get("requestId"), method: c.req.method, path: safePath(c), err: errInfo(err) }, "HTTP handler failed");
      this.#o.metrics?.httpErrors.inc();
      return this.#error(c, 500, "internal error");
    });
    this.#apps.set(role, app);
    return app;
  }

  #error(c: Context<Env>, status: number, error: string, headers: Record<string, string> = {}): Response {
    const id = c.get("requestId");
    return new Response(JSON.stringify({ error, requestId: id }), {
      status,
      headers: { "content-type": JSON_TYPE, "x-request-id": id, "cache-control": "no-store", ...headers },
    });
  }

  async #serve(c: Context<Env>, r: Route): Promise<Response> {
    const incoming = c.env.incoming;
    const url = new URL(c.req.url);
    const facts: RequestFacts = {
      method: c.req.method,
      headers: incoming.headers,
      urlHost: url.host,
      remoteAddress: incoming.socket?.remoteAddress,
    };
    let byToken = false;
    if (r.access !== "public") {
      if (this.#starting) return this.#response(c, starting());
      if (!this.#auth.hostAllowed(single(incoming.headers.host)) || !this.#auth.hostAllowed(facts.urlHost)) {
        this.#refusals.refuse("host", { host: String(incoming.headers.host ?? "").slice(0, 100), path: safePath(c) });
        return this.#error(
          c,
          403,
          "this host name is not allowed for the operator pages: use 127.0.0.1 or localhost, or set PUBLIC_URL to the address you open",
        );
      }
      if (r.access === "operator") {
        const v = await this.#auth.check(facts);
        if (!v.ok) {
          this.#refusals.refuse(v.reason, { path: safePath(c) });
          if (v.reason === "auth" && r.method === "GET" && /text\/html/.test(String(incoming.headers.accept ?? ""))) {
            return new Response(null, { status: 303, headers: { location: `/login?next=${encodeURIComponent(c.req.path)}`, "cache-control": "no-store" } });
          }
          return this.#error(c, v.status, v.error, v.status === 401 ? { "www-authenticate": 'Bearer realm="switchboard"' } : {});
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
      operator: byToken || (await this.#isOperator(facts, c)),
      remoteAddress: facts.remoteAddress,
    };
    const early = r.opts.precheck?.(request);
    if (early) {
      this.#refusals.refuse("precheck", { path: safePath(c), status: early.status });
      return this.#response(c, early);
    }
    if (r.method !== "GET") {
      const limit = r.opts.maxBodyBytes ?? this.#limits.defaultMaxBodyBytes;
      const body = await readBody(incoming, limit, this.budget);
      if (!body.ok) {
        if (body.reason === "aborted") return this.#error(c, 400, "the request body ended early");
        this.#refusals.refuse(body.reason === "too-large" ? "body-too-large" : "body-budget", { path: safePath(c), limit, received: body.received });
        return body.reason === "too-large"
          ? this.#error(c, 413, `request body over ${limit} bytes`)
          : this.#error(c, 503, "too many request bodies in flight; retry shortly", { "retry-after": "1" });
      }
      request.rawBody = body.body;
    }
    // An operator's answer (sessions, transcripts, usage, metrics) is kept by no cache, the browser's included, and
    // read as nothing but its declared type, unless its route says otherwise.
    return this.#response(c, await r.handler(request), r.access === "public" ? {} : { "cache-control": "no-store", "x-content-type-options": "nosniff" });
  }

  /** For a public route (/healthz's details): a store that cannot say whether a login session is live makes the caller a stranger, reported, not a 500. */
  async #isOperator(facts: RequestFacts, c: Context<Env>): Promise<boolean> {
    try {
      return await this.#auth.isOperator(facts);
    } catch (err) {
      this.#o.metrics?.httpErrors.inc();
      this.#o.log.warn(
        { requestId: c.get("requestId"), path: safePath(c), err: errInfo(err) },
        "checking the login session failed; answering as to a stranger",
      );
      return false;
    }
  }

  #response(c: Context<Env>, r: HttpResponse, defaults: Record<string, string> = {}): Response {
    const headers = { ...defaults, "x-request-id": c.get("requestId"), ...r.headers };
    if (!r.stream) return new Response(r.status === 204 || r.status === 304 ? null : (r.body ?? null), { status: r.status, headers });
    return eventStreamResponse(c.env.outgoing, r.status, r.stream, headers);
  }

  async listen(port: number, host: string, role: ListenerRole = "all"): Promise<AddressInfo> {
    const l = this.#limits;
    const listener = getRequestListener((req, env) => this.#app(role).fetch(req, env), {
      // An HTTP/1.0 request may come without Host (a load balancer's health check): it gets this name,
      // which no Host allowlist holds, so /healthz answers it and the operator routes refuse it.
      hostname: "no-host.invalid",
      // Reached when the request cannot become a URL at all (a Host header no URL can hold).
      errorHandler: (err) => {
        this.#refusals.refuse("bad-request", { err: errInfo(err).message });
        return new Response(JSON.stringify({ error: "bad request: the request line or Host header is not valid" }), {
          status: 400,
          headers: { "content-type": JSON_TYPE, connection: "close" },
        });
      },
    });
    const server = http.createServer(
      {
        headersTimeout: l.headersTimeoutMs,
        requestTimeout: l.requestTimeoutMs,
        keepAliveTimeout: 5_000,
        connectionsCheckingInterval: Math.min(1_000, l.headersTimeoutMs),
      },
      (req, res) => void listener(req, res).catch((err) => lastResort(this.#o.log, res, err)),
    );
    server.maxConnections = l.maxConnections;
    // A client that stops reading its answers holds its slot once they fill the socket's buffers: no
    // request timeout applies then (the request came in whole). Cut it after HTTP_REQUEST_TIMEOUT without
    // progress; a socket idle for another reason (a handler still working, between keep-alive requests,
    // an SSE stream's quiet spell) is left to the timeouts that are about it.
    server.setTimeout(l.requestTimeoutMs, (socket: Socket) => {
      if (socket.writableLength === 0) return;
      this.#refusals.refuse("stalled-reader", { buffered: socket.writableLength });
      socket.destroy();
    });
    server.on("drop", () => this.#refusals.refuse("connections", { max: l.maxConnections }));
    server.on("clientError", (err, socket) => answerClientError(this.#refusals, err as NodeJS.ErrnoException, socket as Socket));
    const entry: Listener = { server, role, sockets: new Set() };
    server.on("connection", (s: Socket) => {
      entry.sockets.add(s);
      s.on("close", () => entry.sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      // A backlog as deep as the connection cap: a burst of connects must not overflow the accept
      // queue (a dropped SYN costs the client a 1 s retransmit). The kernel caps it at somaxconn.
      server.listen({ port, host, backlog: Math.max(511, l.maxConnections) }, () => {
        server.off("error", reject);
        resolve();
      });
    });
    // An error after listening (EMFILE on accept) is logged, never thrown.
    server.on("error", (err) => this.#o.log.error({ err: errInfo(err) }, "HTTP server error"));
    this.#listeners.push(entry);
    return server.address() as AddressInfo;
  }

  /** Open connections across listeners. */
  get connections(): number {
    return this.#listeners.reduce((n, l) => n + l.sockets.size, 0);
  }

  get address(): AddressInfo | null {
    return (this.#listeners[0]?.server.address() as AddressInfo | null) ?? null;
  }

  addressOf(role: ListenerRole): AddressInfo | null {
    return (this.#listeners.find((l) => l.role === role)?.server.address() as AddressInfo | null) ?? null;
  }

  async close(): Promise<void> {
    await Promise.all(
      this.#listeners.splice(0).map(async (l) => {
        if (!l.server.listening) return;
        const closed = new Promise<void>((r) => l.server.close(() => r()));
        l.server.closeAllConnections();
        for (const s of l.sockets) s.destroy();
        await closed;
      }),
    );
  }
}

const EMPTY = Buffer.alloc(0);

const single = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? undefined : v);

/** The path for a log line, cut short (it is attacker-controlled). */
const safePath = (c: Context<Env>): string => c.req.path.slice(0, 200);
