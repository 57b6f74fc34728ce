import type { AddressInfo } from "node:net";
import type { Hono } from "hono";
import type { Logger } from "../../log.js";
import type { HttpHandler, RouteOptions } from "../adapter.js";
import type { GatewayMetrics } from "../metrics.js";
import { AddressCap } from "./address-cap.js";
import { BodyBudget } from "./body.js";
import { buildApp } from "./hono-app.js";
import { DEFAULT_LIMITS, type HttpLimits } from "./limits.js";
import { addressOf, type Listener, openListener } from "./listener.js";
import { OperatorAuth } from "./operator-auth.js";
import { RefusalLog } from "./refusals.js";
import type { Access, Edge, Env, HttpMethod, ListenerRole, Route } from "./routes.js";

export { json, unavailable } from "./answers.js";
export { DEFAULT_LIMITS, type HttpLimits } from "./limits.js";
export type { Access, HttpMethod, ListenerRole } from "./routes.js";

export type { RouteOptions } from "../adapter.js";

export interface HttpServerOptions {
  log: Logger;
  metrics?: GatewayMetrics;
  /** Who may use the operator routes. Default: no token, loopback hosts only. */
  auth?: OperatorAuth;
  limits?: Partial<HttpLimits>;
}

/** A mounted route as the server lists it: method, path pattern, and who may reach it. */
export interface MountedRoute {
  method: HttpMethod;
  path: string;
  access: Access;
}

/**
 * The gateway's HTTP edge, on Hono: health, metrics, the console, and the
 * routes adapters mount (Telegram webhooks, Slack events). Every request is
 * answered (JSON errors carry a request id) and none can end the process.
 * Bodies are bounded while they stream (per route, and one budget across
 * connections), connections are capped (per listener, and per client
 * address), and slow senders are cut by the header and request timeouts.
 * Operator routes (anything not mounted `public`) pass the OperatorAuth
 * check first. While the gateway starts (from `starting()` to `ready()`),
 * every route but the public ones answers 503 with Retry-After, and so does
 * a path nobody mounted yet (an adapter mounts its routes as it starts):
 * never a 404 that is not true.
 *
 * The parts: `hono-app.ts` builds a listener's app, `serve.ts` serves one
 * request to a route, `method-not-allowed.ts` decides who is told of a
 * route by a 405, `listener.ts` opens a bounded `node:http` listener.
 */
export class HttpServer {
  readonly #routes: Route[] = [];
  readonly #listeners: Listener[] = [];
  readonly #apps = new Map<ListenerRole, Hono<Env>>();
  readonly #edge: Edge;
  readonly #cap: AddressCap;
  readonly budget: BodyBudget;
  #starting = false;

  constructor(o: HttpServerOptions) {
    const limits = { ...DEFAULT_LIMITS, ...o.limits };
    this.budget = new BodyBudget(limits.maxBufferedBytes);
    this.#cap = new AddressCap(limits.maxConnectionsPerAddress, limits.uncappedAddresses);
    const server = this;
    this.#edge = {
      log: o.log,
      metrics: o.metrics,
      auth: o.auth ?? new OperatorAuth({}),
      refusals: new RefusalLog(o.log, o.metrics),
      limits,
      budget: this.budget,
      get starting() {
        return server.#starting;
      },
    };
  }

  get auth(): OperatorAuth {
    return this.#edge.auth;
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

  /** Every route mounted so far, in mount order. */
  get routes(): MountedRoute[] {
    return this.#routes.map(({ method, path, access }) => ({ method, path, access }));
  }

  #app(role: ListenerRole): Hono<Env> {
    let app = this.#apps.get(role);
    if (!app) {
      app = buildApp(this.#edge, this.#routes, role);
      this.#apps.set(role, app);
    }
    return app;
  }

  async listen(port: number, host: string, role: ListenerRole = "all"): Promise<AddressInfo> {
    const listener = await openListener(this.#edge, this.#cap, () => this.#app(role), { port, host, role });
    this.#listeners.push(listener);
    return addressOf(listener)!;
  }

  /** Open connections across listeners. */
  get connections(): number {
    return this.#listeners.reduce((n, l) => n + l.sockets.size, 0);
  }

  get address(): AddressInfo | null {
    return addressOf(this.#listeners[0]);
  }

  addressOf(role: ListenerRole): AddressInfo | null {
    return addressOf(this.#listeners.find((l) => l.role === role));
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
