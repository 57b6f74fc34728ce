/**
 * A round-robin loopback HTTP proxy, as a load balancer in front of several
 * gateway processes: each request goes to the next target in turn, with its
 * method, path, headers and body forwarded verbatim, and the target's status,
 * headers and body returned verbatim. Slack's Events API requests and
 * Telegram's webhook updates go through it, so consecutive events of one chat
 * land on different processes.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface RoutedRequest {
  method: string;
  path: string;
  body: Buffer;
  /** Index of the target the request went to. */
  target: number;
  status: number;
}

export interface RoundRobinProxy {
  url: string;
  /** Requests per target. */
  readonly perTarget: number[];
  close(): Promise<void>;
}

export async function startRoundRobinProxy(targets: Array<{ host: string; port: number }>, onRouted?: (r: RoutedRequest) => void): Promise<RoundRobinProxy> {
  let next = 0;
  const perTarget = targets.map(() => 0);
  // Keep-alive to every target, as a load balancer pools its upstream connections.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const index = next++ % targets.length;
      perTarget[index]!++;
      const t = targets[index]!;
      const up = http.request({ host: t.host, port: t.port, method: req.method, path: req.url, headers: req.headers, agent }, (upRes) => {
        const out: Buffer[] = [];
        upRes.on("data", (c: Buffer) => out.push(c));
        upRes.on("end", () => {
          const status = upRes.statusCode ?? 502;
          res.writeHead(status, upRes.headers);
          res.end(Buffer.concat(out));
          onRouted?.({ method: req.method ?? "", path: req.url ?? "", body, target: index, status });
        });
        upRes.on("error", () => fail());
      });
      const fail = () => {
        if (res.headersSent) return void res.destroy();
        res.writeHead(502, { "content-type": "text/plain" });
        res.end("bad gateway: the upstream gateway process did not answer");
        onRouted?.({ method: req.method ?? "", path: req.url ?? "", body, target: index, status: 502 });
      };
      up.on("error", fail);
      up.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    perTarget,
    close: () =>
      new Promise<void>((resolve) => {
        agent.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
