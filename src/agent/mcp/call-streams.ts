/**
 * Over Streamable HTTP each request is a POST whose answer may be an SSE
 * stream the server holds open. The SDK gives up a request (its timeout, the
 * turn's abort) by sending `notifications/cancelled` for its id, but goes on
 * reading that request's stream, so a server that never ends it would keep
 * one socket of the gateway per given-up call. This fetch wrapper ties each
 * POSTed request's answer to its id and closes it when the SDK sends the
 * cancellation: the request is aborted if its answer has not begun, its
 * stream errored and the socket let go if it has. The rest of the transport
 * (other calls, the GET stream) goes on; the error the SDK reports for that
 * stream carries a mark the hub knows as its own (isOwnClose), so a call the
 * gateway gave up is not taken for a dead server.
 */
import { randomUUID } from "node:crypto";

type Fetch = (url: string | URL, init?: RequestInit) => Promise<Response>;
type RequestId = string | number;

/** Unguessable, so no text a server sends can pass for it. */
const MARK = `mcp-call-closed-${randomUUID()}`;

export class CallStreamClosed extends Error {
  override readonly name = "CallStreamClosed";
  constructor(id: RequestId) {
    super(`the gateway closed the answer stream of request ${JSON.stringify(id)}, which it gave up [${MARK}]`);
  }
}

/** Whether an error the SDK reports is (or quotes) the closing of a given-up request's stream. */
export function isOwnClose(e: unknown): boolean {
  return e instanceof Error && e.message.includes(MARK);
}

/** The fetch of one transport (request ids are per connection): given-up requests' answers are closed. */
export function closingFetch(inner: Fetch): Fetch {
  const open = new Map<RequestId, AbortController>();
  return async (input, init) => {
    const message = postedMessage(init);
    if (message?.method === "notifications/cancelled") {
      const id = requestId((message.params as { requestId?: unknown } | undefined)?.requestId);
      if (id !== undefined) open.get(id)?.abort(new CallStreamClosed(id));
    }
    const id = message?.method !== undefined ? requestId(message.id) : undefined;
    if (id === undefined) return inner(input, init);
    const controller = new AbortController();
    open.set(id, controller);
    const release = () => {
      if (open.get(id) === controller) open.delete(id);
    };
    let res: Response;
    try {
      res = await inner(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, controller.signal]) : controller.signal });
    } catch (e) {
      release();
      throw e;
    }
    if (!res.body) {
      release();
      return res;
    }
    return new Response(tied(res.body, controller.signal, release), { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

/** The JSON-RPC message a POST carries, or undefined (not a POST, a batch, not JSON). */
function postedMessage(init: RequestInit | undefined): { method?: string; id?: unknown; params?: unknown } | undefined {
  if ((init?.method ?? "GET").toUpperCase() !== "POST" || typeof init?.body !== "string") return undefined;
  try {
    const m = JSON.parse(init.body) as unknown;
    return m && typeof m === "object" && !Array.isArray(m) ? (m as { method?: string; id?: unknown; params?: unknown }) : undefined;
  } catch {
    return undefined;
  }
}

const requestId = (v: unknown): RequestId | undefined => (typeof v === "string" || typeof v === "number" ? v : undefined);

/** `body` as it comes, until `signal` aborts: then it is errored with the signal's reason and the body cancelled. */
function tied(body: ReadableStream<Uint8Array>, signal: AbortSignal, release: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let settled = false;
  let onAbort: () => void = () => undefined;
  const settle = () => {
    settled = true;
    signal.removeEventListener("abort", onAbort);
    release();
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      onAbort = () => {
        if (settled) return;
        settle();
        controller.error(signal.reason);
        reader.cancel(signal.reason).catch(() => undefined);
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    },
    async pull(controller) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (e) {
        if (settled) return;
        settle();
        controller.error(e);
        return;
      }
      if (settled) return;
      if (chunk.done) {
        settle();
        controller.close();
      } else controller.enqueue(chunk.value);
    },
    cancel(reason) {
      if (!settled) settle();
      return reader.cancel(reason);
    },
  });
}
