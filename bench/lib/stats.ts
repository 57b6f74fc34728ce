/** Small statistics helpers: every figure the bench reports is a median or a percentile of many samples. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export interface LatencySummary {
  n: number;
  p50_ms: number;
  p99_ms: number;
  p999_ms: number;
  max_ms: number;
}

export function latency(samples: readonly number[]): LatencySummary {
  const s = Float64Array.from(samples).sort();
  const arr = Array.from(s);
  return {
    n: arr.length,
    p50_ms: r3(percentile(arr, 50)),
    p99_ms: r3(percentile(arr, 99)),
    p999_ms: r3(percentile(arr, 99.9)),
    max_ms: r3(arr[arr.length - 1] ?? Number.NaN),
  };
}

export const r1 = (x: number) => Math.round(x * 10) / 10;
export const r3 = (x: number) => Math.round(x * 1000) / 1000;

/** Throughput of consecutive windows of a completion-time series (ms); the median window is the sustained rate. */
export function windowRates(doneAt: readonly number[], windows: number): number[] {
  const s = [...doneAt].sort((a, b) => a - b);
  const per = Math.floor(s.length / windows);
  const rates: number[] = [];
  for (let w = 0; w < windows && per > 1; w++) {
    const a = s[w * per]!;
    const b = s[(w + 1) * per - 1]!;
    if (b > a) rates.push(((per - 1) * 1000) / (b - a));
  }
  return rates;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
