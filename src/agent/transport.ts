import http from "node:http";
import https from "node:https";
import { Readable } from "node:stream";

/**
 * The model call's HTTP client: the part of `fetch` a model request uses (a
 * POST with a string body, headers, an AbortSignal; the answer as a
 * `Response` whose body streams), over Node's own http/https with
 * keep-alive connections.
 *
 * Why not `fetch` itself: every model call goes through it, and undici's
 * fetch (the Request and Headers steps of the spec, its controller, its body
 * mixins) cost about twice the CPU of the request itself: 0.44 against 0.17
 * ms of CPU per call, 0.34 against 0.16 ms of wall time, on loopback with a
 * four-event stream (a side-by-side loop of 2,000 calls each, warm), and the
 * allocations that come with it, which at 50 msgs/s are what the young
 * generation collects. Why not undici's own `request()`: the agent reads a
 * `Response` (postWithRetry, readBodyText), which callers may still supply
 * through `fetch` (tests do, to count what a call costs), so one interface
 * stays.
 *
 * What it leaves out of fetch, none of which a model API uses: redirects are
 * not followed (a 3xx is the answer, and httpError names where it points), no
 * Accept-Encoding is sent (so a server answers uncompressed), no cookies.
 */
// An idle connection is closed after 4 s (undici's default), before most servers close theirs (Node's 5 s,
// nginx's 75 s): the race of reusing a connection the server is closing comes rarely, and send() retries it.
const agents = {
  "http:": new http.Agent({ keepAlive: true, timeout: 4_000 }),
  "https:": new https.Agent({ keepAlive: true, timeout: 4_000 }),
};

/** Statuses whose response has no body (the Response constructor refuses one for them). */
const NULL_BODY = new Set([204, 205, 304]);

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

function requestHeaders(init: RequestInit["headers"], body: string | Uint8Array | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (init instanceof Headers) for (const [k, v] of init) out[k] = v;
  else if (Array.isArray(init)) for (const [k, v] of init) out[k!.toLowerCase()] = v!;
  else if (init) for (const [k, v] of Object.entries(init as Record<string, string>)) out[k.toLowerCase()] = v;
  out["user-agent"] ??= "switchboard";
  if (body !== undefined) out["content-length"] = String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength);
  return out;
}

/** `fetch` for a model request (see above): `typeof fetch`, so it stands wherever fetch would. */
export function modelFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  if (typeof input !== "string" && !(input instanceof URL)) return Promise.reject(new TypeError("modelFetch takes a URL, not a Request"));
  const url = typeof input === "string" ? new URL(input) : input;
  const agent = agents[url.protocol as keyof typeof agents];
  if (!agent) return Promise.reject(new TypeError(`modelFetch: unsupported protocol ${url.protocol} (use http: or https:)`));
  const body = init.body ?? undefined;
  if (body !== undefined && typeof body !== "string" && !(body instanceof Uint8Array))
    return Promise.reject(new TypeError("modelFetch sends a string or bytes as the body"));
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(abortError(signal));
  const method = (init.method ?? "GET").toUpperCase();
  return send(url, method, agent, requestHeaders(init.headers, body), body, signal, false);
}

function send(
  url: URL,
  method: string,
  agent: http.Agent,
  headers: Record<string, string>,
  body: string | Uint8Array | undefined,
  signal: AbortSignal | undefined,
  retried: boolean,
): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    const client = url.protocol === "https:" ? https : http;
    const req = client.request(url, { method, agent, headers }, (res) => {
      try {
        const status = res.statusCode ?? 0;
        // Checked here, not left to the Response constructor: @hono/node-server (the gateway's HTTP server) replaces the
        // global Response with a lighter one that does not check.
        if (status < 200 || status > 599) throw new RangeError(`the server answered HTTP status ${status}, which no HTTP response can carry`);
        const headers = new Headers();
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        const noBody = NULL_BODY.has(status) || method === "HEAD";
        if (noBody) res.resume();
        // The body's own errors (the connection broken mid-stream, an abort) reach its reader.
        resolve(new Response(noBody ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), { status, headers }));
      } catch (e) {
        res.destroy();
        reject(e);
      }
    });
    const onAbort = () => req.destroy(abortError(signal!) as Error);
    signal?.addEventListener("abort", onAbort, { once: true });
    req.once("close", () => signal?.removeEventListener("abort", onAbort));
    // Before the response: the request failed (refused, reset, DNS, aborted). After it, the body's stream carries errors.
    req.on("error", (e: NodeJS.ErrnoException) => {
      // A kept connection the server closed (idle) as this request went out: sent again at once on a new
      // connection, once (Node's documented retry for reusedSocket), rather than after postWithRetry's backoff.
      if (req.reusedSocket && !retried && !signal?.aborted && (e.code === "ECONNRESET" || e.code === "EPIPE"))
        send(url, method, agent, headers, body, signal, true).then(resolve, reject);
      else reject(e);
    });
    req.end(body);
  });
}
