/**
 * The metrics half of the test OTLP receiver (otlp-receiver.ts): an export
 * of /v1/metrics decoded, from http/json and from http/protobuf (the field
 * numbers of opentelemetry/proto metrics/v1). Histograms and sums keep each
 * data point's attributes, count and sum (a sum's value as its sum).
 */
import { bytes, type Fields, type JsonAny, jsonAttrs, pbAttrs, readFields, str } from "./otlp-receiver.js";

export interface DataPoint {
  attributes: Record<string, unknown>;
  count: number;
  sum: number;
}

export interface ReceivedMetric {
  name: string;
  unit: string;
  /** histogram, sum or gauge. */
  type: string;
  points: DataPoint[];
  resource: Record<string, unknown>;
}

const TYPES = ["histogram", "sum", "gauge"] as const;

export function metricsFromJson(body: JsonAny): ReceivedMetric[] {
  return ((body.resourceMetrics as JsonAny[]) ?? []).flatMap((rm) => {
    const resource = jsonAttrs((rm.resource as JsonAny | undefined)?.attributes as JsonAny[]);
    return ((rm.scopeMetrics as JsonAny[]) ?? []).flatMap((sm) =>
      ((sm.metrics as JsonAny[]) ?? []).map((m) => {
        const type = TYPES.find((t) => t in m) ?? "other";
        const points = (((m[type] as JsonAny | undefined)?.dataPoints as JsonAny[]) ?? []).map((p) => ({
          attributes: jsonAttrs(p.attributes as JsonAny[]),
          count: Number(p.count ?? 1),
          sum: Number(p.sum ?? p.asDouble ?? p.asInt ?? 0),
        }));
        return { name: String(m.name), unit: String(m.unit ?? ""), type, points, resource };
      }),
    );
  });
}

/** HistogramDataPoint: 9 attributes, 4 count (fixed64), 5 sum (double). NumberDataPoint: 7 attributes, 4 as_double, 6 as_int. */
function pbPoint(type: string, buf: Buffer): DataPoint {
  const f: Fields = readFields(buf);
  if (type === "histogram") {
    const count = bytes(f, 4)[0];
    const sum = bytes(f, 5)[0];
    return { attributes: pbAttrs(bytes(f, 9)), count: count ? Number(count.readBigUInt64LE(0)) : 0, sum: sum ? sum.readDoubleLE(0) : 0 };
  }
  const asDouble = bytes(f, 4)[0];
  const asInt = bytes(f, 6)[0];
  return { attributes: pbAttrs(bytes(f, 7)), count: 1, sum: asDouble ? asDouble.readDoubleLE(0) : asInt ? Number(asInt.readBigInt64LE(0)) : 0 };
}

/** ExportMetricsServiceRequest 1 resource_metrics; ResourceMetrics 1 resource, 2 scope_metrics; ScopeMetrics 2 metrics; Metric 1 name, 3 unit, 5 gauge, 7 sum, 9 histogram (each: 1 data_points). */
export function metricsFromProtobuf(raw: Buffer): ReceivedMetric[] {
  return bytes(readFields(raw), 1).flatMap((rmBuf) => {
    const rm = readFields(rmBuf);
    const resource = rm.has(1) ? pbAttrs(bytes(readFields(bytes(rm, 1)[0]!), 1)) : {};
    return bytes(rm, 2).flatMap((smBuf) =>
      bytes(readFields(smBuf), 2).map((mBuf) => {
        const m = readFields(mBuf);
        const field = m.has(9) ? 9 : m.has(7) ? 7 : 5;
        const type = { 9: "histogram", 7: "sum", 5: "gauge" }[field]!;
        const body = bytes(m, field)[0];
        const points = body ? bytes(readFields(body), 1).map((p) => pbPoint(type, p)) : [];
        return { name: str(m, 1), unit: str(m, 3), type, points, resource };
      }),
    );
  });
}
