/** The README's Performance figures, rendered from one bench document (bench/readme-table.ts writes them). */
import { scenarioRows, type Target } from "./report.js";

export interface BenchDoc {
  date: string;
  quick: boolean;
  smoke?: boolean;
  /** The scenarios of an `--only=` run (null in a full run). */
  only?: string[] | null;
  duration_s: number;
  machine: { cpus?: number; memGB?: number; node?: string; cpuModel?: string };
  load_average?: { start: number[]; end: number[] };
  scenarios: Record<string, Record<string, unknown>>;
  targets: Record<string, Target>;
}

/** A figure as the README prints it: thousands grouped, at most three decimals, "not measured" for NaN/null. */
export function figure(x: unknown): string {
  const n = typeof x === "number" ? x : Number.NaN;
  if (!Number.isFinite(n)) return "not measured";
  const digits = Math.abs(n) >= 100 ? 0 : Math.abs(n) >= 10 ? 1 : Math.abs(n) >= 1 ? 2 : 3;
  return n.toLocaleString("en-US", { maximumFractionDigits: digits });
}

/** A table cell never breaks the table: pipes escaped, newlines folded. */
const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\s*\n\s*/g, " ");

function header(doc: BenchDoc): string {
  const m = doc.machine;
  const load = doc.load_average
    ? `; load average (1/5/15 min) ${doc.load_average.start.join(" / ")} at the start, ${doc.load_average.end.join(" / ")} at the end`
    : "";
  const kind = doc.only?.length ? `Partial run (--only=${doc.only.join(",")})` : doc.quick ? "Quick run" : "Full run";
  return `${kind}, ${doc.date}: ${m.cpus ?? "?"} cores (${m.cpuModel ?? "?"}), ${m.memGB ?? "?"} GB, Node ${m.node ?? "?"}; ${figure(doc.duration_s)} s${load}.`;
}

function targetTable(targets: Record<string, Target>): string {
  const met = Object.values(targets).filter((t) => t.met).length;
  const lines = [
    `Targets: ${met} of ${Object.keys(targets).length} met. A figure the bench did not measure is "not measured" and never met.`,
    "",
    "| target | measured | threshold | |",
    "| --- | --- | --- | --- |",
  ];
  for (const [key, t] of Object.entries(targets))
    lines.push(`| ${cell(t.target)} (\`${key}\`) | ${figure(t.value)} | ${figure(t.threshold)} | ${t.met ? "met" : "**missed**"} |`);
  return lines.join("\n");
}

function scenarioTable(scenarios: BenchDoc["scenarios"]): string {
  const lines = ["| scenario | figures |", "| --- | --- |"];
  // A field a scenario did not report is a dash here, not NaN.
  for (const [name, text] of scenarioRows(scenarios)) if (scenarios[name.split(".")[0]!]) lines.push(`| ${name} | ${cell(text.replace(/\bNaN\b/g, "–"))} |`);
  return lines.join("\n");
}

type System = {
  label?: string;
  skipped?: string;
  failed?: string;
  start_to_first_reply_ms?: number;
  idle_rss_mb?: number;
  msgs_per_s?: number;
  cpu_ms_per_msg?: number;
  paced_50?: { p50_ms: number; p99_ms: number } | null;
  rss_after_chats_mb?: number;
};

/** The peers scenario as issue 31 tabled it: each system on the same fake Telegram, one after another. */
function peersTable(peers: Record<string, unknown> | undefined): string | undefined {
  const systems = peers?.systems as Record<string, System> | undefined;
  if (!systems) return undefined;
  const chats = figure((peers?.params as { chats?: number } | undefined)?.chats);
  const ms = (x: unknown) => (Number.isFinite(x) ? `${figure(x)} ms` : "–");
  const mb = (x: unknown) => (Number.isFinite(x) ? `${figure(x)} MB` : "–");
  const lines = [
    `| system | start to first reply | idle RSS | unpaced msgs/s (CPU ms/msg) | p50 / p99 at a paced 50 msgs/s | RSS after ${chats} chats |`,
    "| --- | --- | --- | --- | --- | --- |",
  ];
  for (const [key, sys] of Object.entries(systems)) {
    const name = cell(sys.label ?? key);
    if (sys.skipped || sys.failed) {
      lines.push(`| ${name} | ${cell(sys.skipped ? `skipped: ${sys.skipped}` : `failed: ${sys.failed}`)} | | | | |`);
      continue;
    }
    const rate = Number.isFinite(sys.msgs_per_s) ? `${figure(sys.msgs_per_s)} (${figure(sys.cpu_ms_per_msg)})` : "–";
    const paced = sys.paced_50 ? `${figure(sys.paced_50.p50_ms)} / ${figure(sys.paced_50.p99_ms)} ms` : "–";
    lines.push(`| ${name} | ${ms(sys.start_to_first_reply_ms)} | ${mb(sys.idle_rss_mb)} | ${rate} | ${paced} | ${mb(sys.rss_after_chats_mb)} |`);
  }
  return lines.join("\n");
}

export function performanceSections(doc: BenchDoc): string {
  return [header(doc), peersTable(doc.scenarios.peers), targetTable(doc.targets), scenarioTable(doc.scenarios)].filter(Boolean).join("\n\n");
}
