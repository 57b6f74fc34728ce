/** A strict parser for the Prometheus text exposition format (v0.0.4): throws on any malformed line. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  const typed = new Map<string, string>();
  for (const [i, line] of text.split("\n").entries()) {
    if (line === "") continue;
    if (line.startsWith("# HELP ")) continue;
    if (line.startsWith("# TYPE ")) {
      const [, , name, type] = line.split(" ");
      if (!name || !NAME.test(name) || !["counter", "gauge", "histogram", "summary", "untyped"].includes(type ?? ""))
        throw new Error(`line ${i + 1}: bad TYPE: ${line}`);
      typed.set(name, type!);
      continue;
    }
    if (line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( \d+)?$/.exec(line);
    if (!m) throw new Error(`line ${i + 1}: not a sample: ${line}`);
    const labels: Record<string, string> = {};
    if (m[3]) {
      for (const pair of m[3].match(/[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"/g) ?? []) {
        const eq = pair.indexOf("=");
        labels[pair.slice(0, eq)] = pair.slice(eq + 2, -1);
      }
    }
    // Values parse as Go's ParseFloat does: NaN and Inf are case-insensitive.
    const raw = m[4]!.toLowerCase();
    const value = raw === "+inf" || raw === "inf" ? Infinity : raw === "-inf" ? -Infinity : raw === "nan" ? NaN : Number(m[4]);
    if (Number.isNaN(value) && raw !== "nan") throw new Error(`line ${i + 1}: bad value: ${line}`);
    samples.push({ name: m[1]!, labels, value });
  }
  return samples;
}
