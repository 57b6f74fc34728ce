import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { getRequestListener } from "@hono/node-server";
import type { Hono } from "hono";
import { errInfo } from "../../log.js";
import type { AddressCap } from "./address-cap.js";
import { JSON_TYPE } from "./answers.js";
import { answerClientError, lastResort } from "./client-errors.js";
import type { Edge, Env, ListenerRole } from "./routes.js";

export interface Listener {
  server: http.Server;
  role: ListenerRole;
  sockets: Set<Socket>;
}

/**
 * One `node:http` listener with the edge's bounds: the connection cap (and
 * the per-address one), the header and request timeouts, a reader that
 * stops reading cut, every parser error answered; `app` answers the
 * requests (looked up per request: a mount rebuilds it).
 */
export async function openListener(
  edge: Edge,
  cap: AddressCap,
  app: () => Hono<Env>,
  where: { port: number; host: string; role: ListenerRole },
): Promise<Listener> {
  const l = edge.limits;
  const server = http.createServer(
    {
      headersTimeout: l.headersTimeoutMs,
      requestTimeout: l.requestTimeoutMs,
      keepAliveTimeout: 5_000,
      connectionsCheckingInterval: Math.min(1_000, l.headersTimeoutMs),
    },
    requestListener(edge, app),
  );
  server.maxConnections = l.maxConnections;
  // A client that stops reading its answers holds its slot once they fill the socket's buffers: no
  // request timeout applies then (the request came in whole). Cut it after HTTP_REQUEST_TIMEOUT without
  // progress; a socket idle for another reason (a handler still working, between keep-alive requests,
  // an SSE stream's quiet spell) is left to the timeouts that are about it.
  server.setTimeout(l.requestTimeoutMs, (socket: Socket) => {
    if (socket.writableLength === 0) return;
    edge.refusals.refuse("stalled-reader", { buffered: socket.writableLength });
    socket.destroy();
  });
  server.on("drop", () => edge.refusals.refuse("connections", { max: l.maxConnections }));
  server.on("clientError", (err, socket) => answerClientError(edge.refusals, err as NodeJS.ErrnoException, socket as Socket));
  const entry: Listener = { server, role: where.role, sockets: new Set() };
  // Before the HTTP parser's own listener: a connection over its address's cap is closed before any of it is read.
  server.prependListener("connection", (s: Socket) => {
    if (!cap.admit(s)) {
      refuseConnection(s);
      edge.refusals.refuse("connections-per-address", { max: cap.max, address: s.remoteAddress });
      return;
    }
    entry.sockets.add(s);
    s.on("close", () => entry.sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    // A backlog as deep as the connection cap: a burst of connects must not overflow the accept
    // queue (a dropped SYN costs the client a 1 s retransmit). The kernel caps it at somaxconn.
    server.listen({ port: where.port, host: where.host, backlog: Math.max(511, l.maxConnections) }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  // An error after listening (EMFILE on accept) is logged, never thrown.
  server.on("error", (err) => edge.log.error({ err: errInfo(err) }, "HTTP server error"));
  return entry;
}

export const addressOf = (l: Listener | undefined): AddressInfo | null => (l?.server.address() as AddressInfo | null | undefined) ?? null;

function requestListener(edge: Edge, app: () => Hono<Env>): http.RequestListener {
  const listener = getRequestListener((req, env) => app().fetch(req, env), {
    // An HTTP/1.0 request may come without Host (a load balancer's health check): it gets this name,
    // which no Host allowlist holds, so /healthz answers it and the operator routes refuse it.
    hostname: "no-host.invalid",
    // Reached when the request cannot become a URL at all (a Host header no URL can hold).
    errorHandler: (err) => {
      edge.refusals.refuse("bad-request", { err: errInfo(err).message });
      return new Response(JSON.stringify({ error: "bad request: the request line or Host header is not valid" }), {
        status: 400,
        headers: { "content-type": JSON_TYPE, connection: "close" },
      });
    },
  });
  return (req, res) => void listener(req, res).catch((err) => lastResort(edge.log, res, err));
}

const BUSY_BODY = JSON.stringify({ error: "too many connections from your address; close some and retry" });
const BUSY =
  `HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: ${JSON_TYPE}\r\nRetry-After: 1\r\n` +
  `Content-Length: ${Buffer.byteLength(BUSY_BODY)}\r\n\r\n${BUSY_BODY}`;

/**
 * A connection over its address's cap: a 503 written at once (a client that has not sent its request yet
 * reads it), then closed, at once too, so it holds no slot a moment longer and nothing it sends is read.
 */
function refuseConnection(s: Socket): void {
  s.on("error", () => undefined);
  try {
    s.write(BUSY);
  } finally {
    s.destroy();
  }
}
