/** Send-rate windows, on their own so the bench can import them without the reliability helpers (which load vitest). */

/** The most calls that fell in any `windowMs` window, over all and per key. */
export function peakRate<T>(calls: T[], at: (c: T) => number, key: (c: T) => string, windowMs = 1000): { peak: number; peakPerChat: number } {
  const peakOf = (times: number[]): number => {
    times.sort((a, b) => a - b);
    let best = 0;
    for (let i = 0, j = 0; i < times.length; i++) {
      while (times[i]! - times[j]! >= windowMs) j++;
      best = Math.max(best, i - j + 1);
    }
    return best;
  };
  const per = new Map<string, number[]>();
  for (const c of calls) {
    const k = key(c);
    let l = per.get(k);
    if (!l) per.set(k, (l = []));
    l.push(at(c));
  }
  return { peak: peakOf(calls.map(at)), peakPerChat: Math.max(0, ...[...per.values()].map(peakOf)) };
}
