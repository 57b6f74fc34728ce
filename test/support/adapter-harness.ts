import http from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import type { HttpHandler } from "../../adapters/types.js";
import { createLogger, type Logger } from "../../src/log.js";

/** A real pino logger (with the production redaction) whose lines land in `lines`, so tests can grep them. */
export function captureLogger(lines: string[], opts: { name: string; level?: string }): Logger {
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString("utf8"));
      cb();
    },
  });
  return createLogger({ level: opts.level ?? "debug", destination, name: opts.name });
}

/** Serves routes an adapter mounted through a test AdapterContext over HTTP on 127.0.0.1, as the gateway's server would. */
export class RouteBridge {
  private readonly server = http.createServer((req, res) => void this.handle(req, res));
  constructor(private readonly routes: Map<string, HttpHandler>) {}

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? "/", "http://bridge");
    const handler = this.routes.get(`${req.method} ${url.pathname}`);
    if (!handler) {
      res.writeHead(404).end();
      return;
    }
    const out = await handler({
      method: req.method ?? "GET",
      path: url.pathname,
      headers: req.headers,
      rawBody: Buffer.concat(chunks),
      query: url.searchParams,
      params: {},
    });
    res.writeHead(out.status, out.headers).end(out.body ?? "");
  }
}
