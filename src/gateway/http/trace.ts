/**
 * The span of an HTTP request that brings work in (src/telemetry), after
 * OpenTelemetry's HTTP semantic conventions: `<method> <route>`, kind
 * SERVER, http.request.method, http.route, url.path, url.scheme,
 * server.address and server.port (from the Host header), and
 * http.response.status_code; a 5xx answer is an error. It is a delivery span:
 * an inbound message recorded while it runs is its child.
 *
 * A webhook's request starts a new trace (a platform is no caller whose
 * trace we continue); an API request with `traceparent` continues the
 * caller's. Nothing is computed while tracing is off.
 */
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { callerCarrier, inSpan, tracing } from "../../telemetry/index.js";

export type TracedRoute = "webhook" | "api";

export interface ServedRequest {
  method: string;
  /** The route as mounted (its template). */
  route: string;
  path: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
}

function server(req: ServedRequest): { "server.address"?: string; "server.port"?: number; "url.scheme"?: string } {
  try {
    const host = Array.isArray(req.headers.host) ? req.headers.host[0] : req.headers.host;
    const u = new URL(host ? `http://${host}` : req.url);
    const scheme = new URL(req.url).protocol.replace(":", "");
    return { "server.address": u.hostname, ...(u.port && { "server.port": Number(u.port) }), "url.scheme": scheme };
  } catch {
    return {};
  }
}

/** Runs `serve` inside the request's span; its response's status goes on the span. */
export function servedInSpan(
  kind: TracedRoute,
  req: ServedRequest,
  serve: () => Promise<Response>,
  trustsCaller: (headers: ServedRequest["headers"]) => boolean = () => false,
): Promise<Response> {
  if (!tracing()) return serve();
  const caller = kind === "api" && trustsCaller(req.headers) ? callerCarrier(req.headers) : undefined;
  const attributes = { "http.request.method": req.method, "http.route": req.route, "url.path": req.path, ...server(req) };
  return inSpan(
    `${req.method} ${req.route}`,
    { kind: SpanKind.SERVER, delivery: true, attributes, ...(caller ? { parent: caller } : { root: true }) },
    async (span) => {
      const res = await serve();
      span.setAttribute("http.response.status_code", res.status);
      if (res.status >= 500) span.setAttributes({ "error.type": String(res.status) }).setStatus({ code: SpanStatusCode.ERROR });
      return res;
    },
  );
}
