import http from "node:http";
import type { Socket } from "node:net";
import { errInfo, type Logger } from "../../log.js";
import type { RefusalLog } from "./refusals.js";

/** Malformed input Node's parser refused before any route saw it: answer and close, never throw. */
export function answerClientError(refusals: RefusalLog, err: NodeJS.ErrnoException, socket: Socket): void {
  try {
    const code = err.code ?? "";
    const status = code === "HPE_HEADER_OVERFLOW" ? 431 : code === "ERR_HTTP_REQUEST_TIMEOUT" || code === "ERR_HTTP_HEADERS_TIMEOUT" ? 408 : 400;
    const reason = status === 408 ? "timeout" : status === 431 ? "headers-too-large" : "malformed";
    if (code !== "ECONNRESET") refusals.refuse(reason, { code });
    const res = (socket as Socket & { _httpMessage?: http.ServerResponse })._httpMessage;
    if (code === "ECONNRESET" || !socket.writable || res?.headersSent) {
      socket.destroy();
      return;
    }
    const body = JSON.stringify({ error: status === 408 ? "request timeout" : status === 431 ? "request headers too large" : "bad request" });
    socket.end(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    setTimeout(() => socket.destroy(), 1_000).unref();
  } catch {
    socket.destroy();
  }
}

/** A request that failed outside every handler (Hono itself): a 500 if nothing was sent yet, else the connection is cut. */
export function lastResort(log: Logger, res: http.ServerResponse, err: unknown): void {
  log.error({ err: errInfo(err) }, "HTTP request failed outside any handler");
  try {
    if (!res.headersSent)
      res.writeHead(500, { "content-type": "application/json; charset=utf-8", connection: "close" }).end(JSON.stringify({ error: "internal error" }));
    else res.destroy();
  } catch {
    res.destroy();
  }
}
