/**
 * An OTLP/HTTP receiver for tests: POST /v1/traces and /v1/metrics on
 * 127.0.0.1, each export kept raw (to search the bytes) and decoded, from
 * http/json directly and from http/protobuf with the small wire-format reader
 * below (the field numbers of opentelemetry/proto trace/v1 and common/v1;
 * metrics/v1 in otlp-metrics.ts). `status` makes it answer an error instead.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { metricsFromJson, metricsFromProtobuf, type ReceivedMetric } from "./otlp-metrics.js";

export type { ReceivedMetric } from "./otlp-metrics.js";

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
  resource: Record<string, unknown>;
}

export interface Export {
  contentType: string;
  headers: Record<string, string | string[] | undefined>;
  raw: Buffer;
  spans: ReceivedSpan[];
}

export class OtlpReceiver {
  readonly exports: Export[] = [];
  /** Each /v1/metrics export's metrics, decoded. */
  readonly metricExports: ReceivedMetric[][] = [];
  /** Answer every export with this HTTP status (200 by default). */
  status = 200;
  /** Never answer: each export hangs until the client gives up or the receiver closes. */
  hang = false;
  /** Every POST received, answered or not. */
  requests = 0;
  private waiters: Array<() => void> = [];

  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpReceiver> {
    let receiver!: OtlpReceiver;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        receiver.requests++;
        const raw = Buffer.concat(chunks);
        const contentType = String(req.headers["content-type"] ?? "");
        if (req.method === "POST" && req.url === "/v1/traces" && receiver.status === 200) {
          const spans = contentType.includes("json") ? fromJson(JSON.parse(raw.toString("utf8"))) : fromProtobuf(raw);
          receiver.exports.push({ contentType, headers: req.headers, raw, spans });
        }
        if (req.method === "POST" && req.url === "/v1/metrics" && receiver.status === 200)
          receiver.metricExports.push(contentType.includes("json") ? metricsFromJson(JSON.parse(raw.toString("utf8"))) : metricsFromProtobuf(raw));
        if (!receiver.hang) {
          res.writeHead(receiver.status, { "content-type": contentType || "application/json" });
          res.end();
        }
        for (const w of receiver.waiters.splice(0)) w();
      });
    });
    receiver = new OtlpReceiver(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return receiver;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  get spans(): ReceivedSpan[] {
    return this.exports.flatMap((e) => e.spans);
  }

  /** Waits until `pred` holds for the spans received (each export wakes it). */
  async until(pred: (spans: ReceivedSpan[]) => boolean, timeoutMs = 15_000): Promise<ReceivedSpan[]> {
    await this.untilReceived(() => pred(this.spans), timeoutMs);
    return this.spans;
  }

  /** Waits until `pred` holds, checked after each request (answered or not). */
  async untilReceived(pred: () => boolean, timeoutMs = 15_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!pred()) {
      if (Date.now() > end) throw new Error(`timed out waiting for spans; got ${this.spans.map((s) => s.name).join(", ")}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, 200);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

// --- http/json ---------------------------------------------------------------------------

export type JsonAny = Record<string, unknown>;

function jsonValue(v: JsonAny | undefined): unknown {
  if (!v) return undefined;
  if ("stringValue" in v) return v.stringValue;
  if ("boolValue" in v) return v.boolValue;
  if ("intValue" in v) return Number(v.intValue);
  if ("doubleValue" in v) return v.doubleValue;
  if ("arrayValue" in v) return ((v.arrayValue as { values?: JsonAny[] }).values ?? []).map(jsonValue);
  return undefined;
}

export const jsonAttrs = (list: JsonAny[] | undefined) => Object.fromEntries((list ?? []).map((a) => [a.key as string, jsonValue(a.value as JsonAny)]));

function fromJson(body: JsonAny): ReceivedSpan[] {
  return ((body.resourceSpans as JsonAny[]) ?? []).flatMap((rs) => {
    const resource = jsonAttrs((rs.resource as JsonAny | undefined)?.attributes as JsonAny[]);
    return ((rs.scopeSpans as JsonAny[]) ?? []).flatMap((ss) =>
      ((ss.spans as JsonAny[]) ?? []).map((s) => ({
        traceId: String(s.traceId),
        spanId: String(s.spanId),
        parentSpanId: String(s.parentSpanId ?? ""),
        name: String(s.name),
        kind: Number(s.kind),
        attributes: jsonAttrs(s.attributes as JsonAny[]),
        events: ((s.events as JsonAny[]) ?? []).map((e) => ({ name: String(e.name), attributes: jsonAttrs(e.attributes as JsonAny[]) })),
        resource,
      })),
    );
  });
}

// --- http/protobuf ------------------------------------------------------------------------

/** The fields of one message: field number to its values (varints as bigint, length-delimited as bytes, fixed64 as 8 bytes). */
export type Fields = Map<number, Array<bigint | Buffer>>;

export function readFields(buf: Buffer): Fields {
  const fields: Fields = new Map();
  let i = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++]!;
      result |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return result;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const field = key >>> 3;
    const wire = key & 7;
    const take = (n: number): Buffer => {
      i += n;
      return buf.subarray(i - n, i);
    };
    let value: bigint | Buffer;
    if (wire === 0) value = varint();
    else if (wire === 1) value = take(8);
    else if (wire === 2) value = take(Number(varint()));
    else if (wire === 5) value = take(4);
    else throw new Error(`unexpected protobuf wire type ${wire}`);
    fields.set(field, [...(fields.get(field) ?? []), value]);
  }
  return fields;
}

export const bytes = (f: Fields, n: number): Buffer[] => (f.get(n) ?? []) as Buffer[];
export const str = (f: Fields, n: number): string => bytes(f, n)[0]?.toString("utf8") ?? "";
const hex = (f: Fields, n: number): string => bytes(f, n)[0]?.toString("hex") ?? "";

/** AnyValue: 1 string, 2 bool, 3 int, 4 double, 5 array. */
function pbValue(buf: Buffer): unknown {
  const f = readFields(buf);
  if (f.has(1)) return str(f, 1);
  if (f.has(2)) return (f.get(2)![0] as bigint) !== 0n;
  if (f.has(3)) return Number(BigInt.asIntN(64, f.get(3)![0] as bigint));
  if (f.has(4)) return (f.get(4)![0] as Buffer).readDoubleLE(0);
  if (f.has(5)) return bytes(readFields(bytes(f, 5)[0]!), 1).map(pbValue);
  return undefined;
}

/** KeyValue: 1 key, 2 value. */
export const pbAttrs = (list: Buffer[]) =>
  Object.fromEntries(
    list.map((kv) => {
      const f = readFields(kv);
      return [str(f, 1), bytes(f, 2)[0] ? pbValue(bytes(f, 2)[0]!) : undefined];
    }),
  );

/** ExportTraceServiceRequest 1 resource_spans; ResourceSpans 1 resource (1 attributes), 2 scope_spans; ScopeSpans 2 spans. */
function fromProtobuf(raw: Buffer): ReceivedSpan[] {
  return bytes(readFields(raw), 1).flatMap((rsBuf) => {
    const rs = readFields(rsBuf);
    const resource = rs.has(1) ? pbAttrs(bytes(readFields(bytes(rs, 1)[0]!), 1)) : {};
    return bytes(rs, 2).flatMap((ssBuf) =>
      bytes(readFields(ssBuf), 2).map((spanBuf) => {
        // Span: 1 trace_id, 2 span_id, 4 parent_span_id, 5 name, 6 kind, 9 attributes, 11 events (Event: 2 name, 3 attributes).
        const s = readFields(spanBuf);
        return {
          traceId: hex(s, 1),
          spanId: hex(s, 2),
          parentSpanId: hex(s, 4),
          name: str(s, 5),
          kind: Number((s.get(6)?.[0] as bigint | undefined) ?? 0n),
          attributes: pbAttrs(bytes(s, 9)),
          events: bytes(s, 11).map((e) => {
            const ef = readFields(e);
            return { name: str(ef, 2), attributes: pbAttrs(bytes(ef, 3)) };
          }),
          resource,
        };
      }),
    );
  });
}
