/**
 * The span helpers every layer uses. With tracing off each returns at once
 * (no tracer, no context switch), so the core's cost is a flag check.
 * Children nest through the SDK's AsyncLocalStorage context; where work
 * crosses a queue (the turn runs later than the record), the parent travels
 * explicitly as a TraceCarrier (W3C traceparent).
 */
import {
  type Attributes,
  type Context,
  context,
  createContextKey,
  INVALID_SPAN_CONTEXT,
  propagation,
  ROOT_CONTEXT,
  type Span,
  type SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { tracing } from "./state.js";

/** A span's W3C trace context, carried with work that crosses a queue or a process, and when that work was queued (epoch ms). */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
  queuedAt?: number;
}

export interface SpanOptions {
  attributes?: Attributes;
  kind?: SpanKind;
  /** The parent: a context or a carrier (default: the active context). */
  parent?: Context | TraceCarrier;
  /** Start a new trace, whatever is active. */
  root?: boolean;
  /**
   * The span is a delivery's (an HTTP request that brings an event in: a webhook, an API call): an
   * inbound message recorded inside it is its child instead of starting a trace of its own.
   */
  delivery?: boolean;
}

const DELIVERY = createContextKey("switchboard.delivery");

/** The active context is a delivery's span (see SpanOptions.delivery); false while tracing is off. */
export function inDelivery(): boolean {
  return tracing() && context.active().getValue(DELIVERY) === true;
}

/** The W3C trace context a caller sent in its request headers, if it sent one. */
export function callerCarrier(headers: Record<string, string | string[] | undefined>): TraceCarrier | undefined {
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const traceparent = one(headers.traceparent);
  const tracestate = one(headers.tracestate);
  return traceparent ? { traceparent, ...(tracestate && { tracestate }) } : undefined;
}

const NOOP_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
const tracer = () => trace.getTracer("switchboard");

/** The context a carrier names (the root context for none). */
export function contextFrom(carrier: TraceCarrier | undefined): Context {
  if (!carrier) return ROOT_CONTEXT;
  const headers: Record<string, string> = { traceparent: carrier.traceparent, ...(carrier.tracestate && { tracestate: carrier.tracestate }) };
  return propagation.extract(ROOT_CONTEXT, headers);
}

function parentOf(opts: SpanOptions): Context {
  if (opts.root) return ROOT_CONTEXT;
  const p = opts.parent;
  if (p === undefined) return context.active();
  return "traceparent" in p ? contextFrom(p as TraceCarrier) : (p as Context);
}

function failed(span: Span, err: unknown): void {
  // The error's type only: messages can quote the user's text or a tool's output.
  const type = err instanceof Error ? ((err as { code?: unknown }).code ?? err.name) : typeof err;
  span.setAttribute("error.type", String(type));
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** Runs `fn` inside a new span (a child of the active context unless told otherwise), ending it when `fn` settles. */
export async function inSpan<T>(name: string, opts: SpanOptions, fn: (span: Span) => Promise<T> | T): Promise<T> {
  if (!tracing()) return fn(NOOP_SPAN);
  const parent = parentOf(opts);
  const span = tracer().startSpan(name, { attributes: opts.attributes, kind: opts.kind, root: opts.root }, parent);
  const active = trace.setSpan(parent, span);
  try {
    return await context.with(opts.delivery ? active.setValue(DELIVERY, true) : active, () => fn(span));
  } catch (err) {
    failed(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** A span that outlives one call (around a generator's yields): its context for children, and its end. */
export interface OpenSpan {
  span: Span;
  context: Context;
  end(err?: unknown): void;
}

export function openSpan(name: string, opts: SpanOptions = {}): OpenSpan {
  if (!tracing()) return { span: NOOP_SPAN, context: ROOT_CONTEXT, end: () => undefined };
  const parent = parentOf(opts);
  const span = tracer().startSpan(name, { attributes: opts.attributes, kind: opts.kind, root: opts.root }, parent);
  return {
    span,
    context: trace.setSpan(parent, span),
    end(err) {
      if (err !== undefined) failed(span, err);
      span.end();
    },
  };
}

/** A span for a wait already over: from `startMs` (epoch ms) until now. */
export function recordSpan(name: string, startMs: number, opts: SpanOptions = {}): void {
  if (!tracing()) return;
  tracer().startSpan(name, { attributes: opts.attributes, kind: opts.kind, startTime: startMs }, parentOf(opts)).end();
}

/** The active span's carrier (or `span`'s), stamped with now as its queueing time; undefined while tracing is off. */
export function traceCarrier(span?: Span): TraceCarrier | undefined {
  if (!tracing()) return undefined;
  const headers: Record<string, string> = {};
  propagation.inject(span ? trace.setSpan(context.active(), span) : context.active(), headers);
  return headers.traceparent
    ? { traceparent: headers.traceparent, ...(headers.tracestate && { tracestate: headers.tracestate }), queuedAt: Date.now() }
    : undefined;
}

/** Runs `fn` with the carrier's context active (as it is, without one or while tracing is off). */
export function inContext<T>(carrier: TraceCarrier | undefined, fn: () => T): T {
  if (!tracing() || !carrier) return fn();
  return context.with(contextFrom(carrier), fn);
}

/** The active span's `traceparent` (and `tracestate`) as request headers; undefined while tracing is off or outside a span. */
export function activeTraceHeaders(): Record<string, string> | undefined {
  if (!tracing() || !trace.getSpan(context.active())) return undefined;
  const out: Record<string, string> = {};
  propagation.inject(context.active(), out);
  return out.traceparent ? out : undefined;
}

/** `headers` with `traceparent` (and `tracestate`) for `span`, so the server's spans join the trace; unchanged while tracing is off. */
export function withTraceHeaders(headers: Record<string, string>, span: Span): Record<string, string> {
  if (!tracing() || !trace.isSpanContextValid(span.spanContext())) return headers;
  const out = { ...headers };
  propagation.inject(trace.setSpan(context.active(), span), out);
  return out;
}

/** fetch, with the active span's `traceparent` added to the request's headers (plain fetch while tracing is off). */
export function tracedFetch(url: string | URL, init?: RequestInit): Promise<Response> {
  const extra = activeTraceHeaders();
  if (!extra) return fetch(url, init);
  const headers = new Headers(init?.headers);
  for (const [k, v] of Object.entries(extra)) headers.set(k, v);
  return fetch(url, { ...init, headers });
}
