import type http from "node:http";
import type { HttpResponse } from "../adapter.js";

/** How far a reader may fall behind an event stream before it is dropped. */
const SSE_BACKLOG_BYTES = 1024 * 1024;

/**
 * A streamed response (server-sent events): `start` writes chunks until the
 * client goes away, and registers what to close then. A reader that stops
 * reading is dropped rather than buffered for without end.
 */
export function eventStreamResponse(
  outgoing: http.ServerResponse,
  status: number,
  start: NonNullable<HttpResponse["stream"]>,
  headers: Record<string, string>,
): Response {
  const closers: Array<() => void> = [];
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    for (const fn of closers.splice(0)) fn();
  };
  outgoing.once("close", close);
  const encoder = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>(
    {
      start(ctrl) {
        start(
          (chunk) => {
            if (closed) return false;
            // A reader that stopped reading is dropped rather than buffered for without end.
            if ((ctrl.desiredSize ?? 0) < -SSE_BACKLOG_BYTES) {
              close();
              ctrl.error(new Error("event stream client fell behind"));
              return false;
            }
            ctrl.enqueue(encoder.encode(chunk));
            return true;
          },
          (fn) => (closed ? fn() : closers.push(fn)),
        );
      },
      cancel: close,
    },
    new ByteLengthQueuingStrategy({ highWaterMark: 64 * 1024 }),
  );
  return new Response(stream, { status, headers: { "cache-control": "no-store", ...headers } });
}
