import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "../log.js";
import { errInfo } from "../log.js";
import type { HttpHandler, HttpRequest, HttpResponse } from "./adapter.js";

/** Largest request body accepted (Slack and Telegram payloads are far smaller). */
const MAX_BODY = 2 * 1024 * 1024;

interface Route {
  method: string;
  parts: string[];
  handler: HttpHandler;
}

/**
 * The gateway's one HTTP server: health, metrics, the console, and whatever
 * routes adapters mount (Telegram webhooks, Slack events). Routing is a few
 * exact and `:param` patterns, so it is written here rather than pulling in a
 * framework; handlers see the raw body bytes, which signature checks need.
 */
export class HttpServer {
  readonly #routes: Route[] = [];
  readonly #server: http.Server;
  #sockets = new Set<import("node:net").Socket>();

  constructor(private readonly log: Logger) {
    this.#server = http.createServer((req, res) => void this.#serve(req, res));
    this.#server.on("connection", (s) => {
      this.#sockets.add(s);
      s.on("close", () => this.#sockets.delete(s));
    });
  }

  route(method: "GET" | "POST", path: string, handler: HttpHandler): void {
    const parts = path.split("/").filter(Boolean);
    if (this.#routes.some((r) => r.method === method && r.parts.join("/") === parts.join("/"))) {
      throw new Error(`HTTP route ${method} ${path} is already mounted; each adapter needs its own path.`);
    }
    this.#routes.push({ method, parts, handler });
  }

  #match(method: string, path: string): { route: Route; params: Record<string, string> } | "method" | undefined {
    const segs = path.split("/").filter(Boolean);
    let wrongMethod = false;
    for (const r of this.#routes) {
      if (r.parts.length !== segs.length) continue;
      const params: Record<string, string> = {};
      const ok = r.parts.every((p, i) => {
        if (p.startsWith(":")) {
          params[p.slice(1)] = decodeURIComponent(segs[i]!);
          return true;
        }
        return p === segs[i];
      });
      if (!ok) continue;
      if (r.method !== method) {
        wrongMethod = true;
        continue;
      }
      return { route: r, params };
    }
    return wrongMethod ? "method" : undefined;
  }

  async #serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://localhost");
    const found = this.#match(req.method ?? "GET", url.pathname);
    if (found === undefined) return send(res, { status: 404, body: JSON.stringify({ error: "not found" }), headers: { "content-type": "application/json" } });
    if (found === "method") return send(res, { status: 405, body: JSON.stringify({ error: "method not allowed" }), headers: { "content-type": "application/json" } });
    let rawBody: Buffer;
    try {
      rawBody = await readBody(req);
    } catch {
      return send(res, { status: 413, body: JSON.stringify({ error: `request body over ${MAX_BODY} bytes` }), headers: { "content-type": "application/json" } });
    }
    const request: HttpRequest = { method: req.method ?? "GET", path: url.pathname, headers: req.headers, rawBody, query: url.searchParams, params: found.params };
    try {
      send(res, await found.route.handler(request));
    } catch (err) {
      this.log.error({ path: url.pathname, err: errInfo(err) }, "HTTP handler failed");
      if (!res.headersSent) send(res, { status: 500, body: JSON.stringify({ error: "internal error" }), headers: { "content-type": "application/json" } });
    }
  }

  async listen(port: number, host: string): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(port, host, () => {
        this.#server.off("error", reject);
        resolve();
      });
    });
    return this.#server.address() as AddressInfo;
  }

  get address(): AddressInfo | null {
    return this.#server.address() as AddressInfo | null;
  }

  async close(): Promise<void> {
    if (!this.#server.listening) return;
    const closed = new Promise<void>((r) => this.#server.close(() => r()));
    this.#server.closeAllConnections();
    for (const s of this.#sockets) s.destroy();
    await closed;
  }
}

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new Error("too large"));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function send(res: http.ServerResponse, r: HttpResponse): void {
  if (r.stream) {
    res.writeHead(r.status, { "cache-control": "no-store", ...r.headers });
    res.flushHeaders();
    r.stream(
      (chunk) => res.write(chunk),
      (fn) => res.on("close", fn),
    );
    return;
  }
  res.writeHead(r.status, r.headers ?? {});
  res.end(r.body ?? "");
}

export const json = (status: number, body: unknown): HttpResponse => ({ status, headers: { "content-type": "application/json; charset=utf-8" }, body: JSON.stringify(body) });
