/** The targets (issue 19's table, and issue 8's that still stand) and the short human table. */
type Scen = Record<string, Record<string, unknown>>;
export interface Target {
  target: string;
  value: number;
  threshold: number;
  met: boolean;
}

const num = (s: Scen, k: string, f: string) => Number((s[k] as Record<string, unknown> | undefined)?.[f] ?? Number.NaN);
const nested = (s: Scen, k: string, a: string, b: string) => Number(((s[k]?.[a] ?? {}) as Record<string, unknown>)[b] ?? Number.NaN);

export function targets(s: Scen): Record<string, Target> {
  const ge = (target: string, value: number, threshold: number): Target => ({ target, value, threshold, met: value >= threshold });
  const le = (target: string, value: number, threshold: number): Target => ({ target, value, threshold, met: value <= threshold });
  const soakLabel = String((s.memory?.params as Record<string, unknown> | undefined)?.soak_label ?? "soak");
  // Issue 19's table (issue 8's throughput and p50 targets stand beside it).
  return {
    core_sqlite_throughput: ge("core_sqlite >= 3000 msgs/s", num(s, "core_sqlite", "msgs_per_s"), 3000),
    floor_ratio_sqlite: ge("core/floor >= 0.8 (sqlite)", num(s, "floor_sqlite", "ratio"), 0.8),
    floor_ratio_postgres: ge("core/floor >= 0.8 (postgres)", num(s, "floor_postgres", "ratio"), 0.8),
    // A steady chat (one that has had its first message): what issue 19 budgets. A chat's first message also creates its session.
    statements_sqlite: le("SQL statements per message <= 8, steady chat (sqlite)", num(s, "core_sqlite", "statements_per_msg_steady"), 8),
    statements_postgres: le("SQL statements per message <= 8, steady chat (postgres)", num(s, "core_postgres", "statements_per_msg_steady"), 8),
    overhead_p50_sqlite: le("overhead p50 <= 2 ms @500/s (sqlite)", nested(s, "core_sqlite", "overhead_at_rate", "p50_ms"), 2),
    overhead_p99_sqlite: le("overhead p99 <= 10 ms @500/s (sqlite)", nested(s, "core_sqlite", "overhead_at_rate", "p99_ms"), 10),
    overhead_p999_sqlite: le("overhead p99.9 <= 25 ms @500/s (sqlite)", nested(s, "core_sqlite", "overhead_at_rate", "p999_ms"), 25),
    overhead_p50_postgres: le("overhead p50 <= 2 ms @500/s (postgres)", nested(s, "core_postgres", "overhead_at_rate", "p50_ms"), 2),
    overhead_p99_postgres: le("overhead p99 <= 10 ms @500/s (postgres)", nested(s, "core_postgres", "overhead_at_rate", "p99_ms"), 10),
    overhead_p999_postgres: le("overhead p99.9 <= 25 ms @500/s (postgres)", nested(s, "core_postgres", "overhead_at_rate", "p999_ms"), 25),
    // Like for like: the peer never paces itself and the fake never rate-limits, so Switchboard runs with its pacing lifted too.
    peer_ratio: ge("switchboard/peer >= 1.5 (both unpaced)", num(s, "peer_grammy_session", "ratio_unthrottled"), 1.5),
    peer_ratio_paced: ge("switchboard/peer >= 1.5 (Switchboard paced to Telegram's limits)", num(s, "peer_grammy_session", "ratio"), 1.5),
    rss_live_chats: le("RSS <= 150 MB at live chats, three adapters", num(s, "memory", "rss_live_chats_mb"), 150),
    soak_slope: le(`RSS slope <= 1 MB/min (${soakLabel})`, Math.abs(num(s, "memory", "soak_slope_bytes_per_min")), 1024 * 1024),
    cli_command: le("each CLI command <= 300 ms (median, compiled build)", num(s, "cli", "slowest_wall_ms"), 300),
    start_to_ready: le("start to ready <= 500 ms (compiled build)", num(s, "startup", "start_to_ready_ms"), 500),
    rotation_p99: le("/new p99 <= 10 ms under 500 msgs/s", num(s, "rotation", "p99_ms"), 10),
    ...issue31(s, ge, le),
  };
}

/** The latency of one paced run of a platform's e2e (`paced.runs`: rate, agent), or NaN when it did not run. */
function paced(s: Scen, platform: string, rate: number, agent: string, field: "p50_ms" | "p99_ms" | "p999_ms"): number {
  const runs = (
    (s[`e2e_${platform}`]?.paced as { runs?: Array<{ rate: number; agent: string; latency: Record<string, number> }> } | undefined)?.runs ?? []
  ).filter((r) => r.rate === rate && r.agent === agent);
  return Number(runs[0]?.latency[field] ?? Number.NaN);
}

type Make = (target: string, value: number, threshold: number) => Target;

/** One figure of one system of the peers scenario (`systems.<key>.<field>[.<sub>]`), or NaN when it did not run. */
function peer(s: Scen, key: string, field: string, sub?: string): number {
  const sys = (s.peers?.systems as Record<string, Record<string, unknown>> | undefined)?.[key];
  const v = sub ? (sys?.[field] as Record<string, unknown> | null | undefined)?.[sub] : sys?.[field];
  return typeof v === "number" ? v : Number.NaN;
}

/** One table row per system of the peers scenario. */
function peerRows(s: Scen): [string, string][] {
  const systems = (s.peers?.systems ?? {}) as Record<string, Record<string, unknown>>;
  const chats = (s.peers?.params as Record<string, unknown> | undefined)?.chats;
  return Object.entries(systems).map(([key, sys]): [string, string] => {
    if (typeof sys.skipped === "string") return [`peers.${key}`, `skipped: ${sys.skipped}`];
    if (typeof sys.failed === "string") return [`peers.${key}`, `FAILED: ${sys.failed}`];
    const f = (field: string, sub?: string) => peer(s, key, field, sub);
    return [
      `peers.${key}`,
      `start to first reply ${f("start_to_first_reply_ms")} ms, idle RSS ${f("idle_rss_mb")} MB, ${f("msgs_per_s")} msgs/s unpaced (${f("cpu_ms_per_msg")} CPU ms/msg), @50/s p50/p99 ${f("paced_50", "p50_ms")}/${f("paced_50", "p99_ms")} ms, RSS after ${chats} chats ${f("rss_after_chats_mb")} MB`,
    ];
  });
}

/**
 * Issue 31's figures, each with its target. The thresholds of the issue's
 * side-by-side run stand (Chat SDK's p50/p99 at 50 msgs/s, 3.1 and 8.7 ms);
 * beside them, the peers scenario's same-run comparisons: CPU per message
 * against the plain grammY bot's, p99 at 50 msgs/s and RSS after its chats
 * against the Chat SDK bot's, each system in its own process. A figure this
 * run did not measure is NaN (null in the JSON), never met: the cross-process
 * send rate, which test/reliability/multiprocess-send-rate.test.ts asserts
 * (at most 30 Telegram sends in any second from three processes).
 */
function issue31(s: Scen, ge: Make, le: Make): Record<string, Target> {
  const liveChats = Number((s.memory?.params as Record<string, unknown> | undefined)?.live_chats ?? Number.NaN);
  const cpuRatio = peer(s, "switchboard_echo", "cpu_ms_per_msg") / peer(s, "grammy", "cpu_ms_per_msg");
  const peerChats = Number((s.peers?.params as Record<string, unknown> | undefined)?.chats ?? 2000);
  return {
    i31_start_to_ready: le("start to ready <= 250 ms, three adapters (compiled build)", num(s, "startup", "start_to_ready_ms"), 250),
    i31_rss_idle: le("idle RSS <= 100 MB", num(s, "memory", "rss_idle_mb"), 100),
    i31_cpu_vs_grammy: le(
      "CPU ms per message <= 1.5x the plain grammY bot's (peers: Telegram webhook, unpaced, same run)",
      Math.round(cpuRatio * 100) / 100,
      1.5,
    ),
    i31_p50_50_echo: le("p50 <= 3.1 ms at 50 msgs/s, Telegram webhook, echo (Chat SDK's)", paced(s, "telegram", 50, "echo", "p50_ms"), 3.1),
    i31_p99_50_echo: le("p99 <= 8.7 ms at 50 msgs/s, Telegram webhook, echo (Chat SDK's)", paced(s, "telegram", 50, "echo", "p99_ms"), 8.7),
    i31_p99_50_model: le("p99 <= 8.7 ms at 50 msgs/s, Telegram webhook, a fake model", paced(s, "telegram", 50, "model", "p99_ms"), 8.7),
    i31_p99_50_vs_chat_sdk: le(
      "p99 at 50 msgs/s <= the Chat SDK bot's (peers, same run), echo",
      peer(s, "switchboard_echo", "paced_50", "p99_ms"),
      peer(s, "chat_sdk", "paced_50", "p99_ms"),
    ),
    i31_p99_50_model_vs_chat_sdk: le(
      "p99 at 50 msgs/s <= the Chat SDK bot's (peers, same run), a fake model",
      peer(s, "switchboard_model", "paced_50", "p99_ms"),
      peer(s, "chat_sdk", "paced_50", "p99_ms"),
    ),
    i31_rss_2000: le(
      `RSS after ${peerChats.toLocaleString("en")} chats <= the Chat SDK bot's (peers, same run), echo`,
      peer(s, "switchboard_echo", "rss_after_chats_mb"),
      peer(s, "chat_sdk", "rss_after_chats_mb"),
    ),
    i31_rss_10000: le(
      `RSS <= 150 MB at ${Number.isFinite(liveChats) ? liveChats : "the live"} chats (10,000 in the full run)`,
      num(s, "memory", "rss_live_chats_mb"),
      150,
    ),
    i31_soak_slope: soakSlope(s),
    i31_floor_sqlite: ge("core/floor >= 0.8 (sqlite)", num(s, "floor_sqlite", "ratio"), 0.8),
    i31_core_postgres: ge("core >= 730 msgs/s on PostgreSQL (1.5x 487)", num(s, "core_postgres", "msgs_per_s"), 730),
    i31_overhead_p99_postgres: le("overhead p99 <= 20 ms @500/s (postgres)", nested(s, "core_postgres", "overhead_at_rate", "p99_ms"), 20),
    i31_cross_process_sends: crossProcess(s),
  };
}

/** The floor at the core's own share of first messages, and at the trace's 1:9 (as reported before that share was followed). */
function floorRow(s: Scen, k: string): string {
  const share = nested(s, k, "params", "first_message_share");
  return `${num(s, k, "msgs_per_s")} msgs/s at the core's mix (${Math.round(share * 100)}% first messages); core/floor ${num(s, k, "ratio")}; at the trace's 1:9 mix ${nested(s, k, "trace_mix", "msgs_per_s")} msgs/s, core/floor ${nested(s, k, "trace_mix", "ratio")}`;
}

/**
 * Issue 31 item 3's soak: the slope of RSS right after a full collection, what stays (memory.ts
 * says why the slope of every-second samples is not it). Met only by the soak the issue names:
 * 30 minutes (`--soak-minutes=30`) over chats whose windows were all full when it began, so the
 * windows filling is not counted as growth.
 */
function soakSlope(s: Scen): Target {
  const m = (s.memory ?? {}) as Record<string, unknown>;
  const minutes = Number((m.params as Record<string, unknown> | undefined)?.soak_seconds ?? Number.NaN) / 60;
  const w = (m.soak_windows ?? {}) as { sessions?: number; full?: number };
  const full = w.sessions !== undefined && w.sessions > 0 && w.full === w.sessions;
  const value = Math.abs(num(s, "memory", "soak_collected_slope_bytes_per_min")) / 2 ** 20;
  const which = Number.isFinite(minutes)
    ? `${Math.round(minutes * 10) / 10}-minute soak, windows ${full ? "full" : `full in ${w.full ?? "?"} of ${w.sessions ?? "?"} chats`}`
    : "no soak";
  const t = `soak RSS slope <= 0.5 MB/min, 30-minute soak, windows full (RSS after a full collection; this run: ${which})`;
  return { target: t, value, threshold: 0.5, met: value <= 0.5 && minutes >= 30 && full };
}

/** Issue 31 item 7: met only when the peak is within Telegram's limit and every message was answered once, with no 429. */
function crossProcess(s: Scen): Target {
  const peak = num(s, "cross_process", "peak_sends_per_s");
  const once = s.cross_process?.answered_once === true;
  return {
    target: "Telegram sends in any 1 s from three processes of one bot <= 30, every message answered once, no 429 (cross_process)",
    value: peak,
    threshold: 30,
    met: peak <= 30 && once,
  };
}

/** One line of figures per scenario: the stderr table, and the README's (bench/readme-table.ts). */
export function scenarioRows(s: Scen): [string, string][] {
  return [
    [
      "core_sqlite",
      `${num(s, "core_sqlite", "msgs_per_s")} msgs/s; @500/s p50 ${nested(s, "core_sqlite", "overhead_at_rate", "p50_ms")} p99 ${nested(s, "core_sqlite", "overhead_at_rate", "p99_ms")} p99.9 ${nested(s, "core_sqlite", "overhead_at_rate", "p999_ms")} ms; event-loop delay p99 ${nested(s, "core_sqlite", "overhead_causes", "event_loop_delay_p99_ms")} ms, GC max ${nested(s, "core_sqlite", "overhead_causes", "gc_max_ms")} ms; ${num(s, "core_sqlite", "statements_per_msg_steady")} statements/msg steady (${num(s, "core_sqlite", "statements_per_msg")} with new chats), ${num(s, "core_sqlite", "cpu_ms_per_msg")} CPU ms/msg`,
    ],
    [
      "core_postgres",
      `${num(s, "core_postgres", "msgs_per_s")} msgs/s; @500/s p50 ${nested(s, "core_postgres", "overhead_at_rate", "p50_ms")} p99 ${nested(s, "core_postgres", "overhead_at_rate", "p99_ms")} p99.9 ${nested(s, "core_postgres", "overhead_at_rate", "p999_ms")} ms; event-loop delay p99 ${nested(s, "core_postgres", "overhead_causes", "event_loop_delay_p99_ms")} ms, GC max ${nested(s, "core_postgres", "overhead_causes", "gc_max_ms")} ms; ${num(s, "core_postgres", "statements_per_msg_steady")} statements/msg steady (${num(s, "core_postgres", "statements_per_msg")} with new chats), ${num(s, "core_postgres", "cpu_ms_per_msg")} CPU ms/msg`,
    ],
    ["floor_sqlite", floorRow(s, "floor_sqlite")],
    ["floor_postgres", floorRow(s, "floor_postgres")],
    ...(["telegram", "discord", "slack"] as const).map((p): [string, string] => [
      `e2e_${p}`,
      `${num(s, `e2e_${p}`, "msgs_per_s")} msgs/s p50 ${num(s, `e2e_${p}`, "p50_ms")} p99 ${num(s, `e2e_${p}`, "p99_ms")} ms; limits lifted ${nested(s, `e2e_${p}`, "unthrottled", "msgs_per_s")} msgs/s; paced p50/p99/p99.9 ms: ${[
        50, 200,
      ]
        .flatMap((rate) =>
          (["echo", "model"] as const).map(
            (agent) => `${agent}@${rate} ${paced(s, p, rate, agent, "p50_ms")}/${paced(s, p, rate, agent, "p99_ms")}/${paced(s, p, rate, agent, "p999_ms")}`,
          ),
        )
        .join(", ")}`,
    ]),
    [
      "peer_grammy_session",
      `${num(s, "peer_grammy_session", "msgs_per_s")} msgs/s; ratio ${num(s, "peer_grammy_session", "ratio")} (limits lifted ${num(s, "peer_grammy_session", "ratio_unthrottled")})`,
    ],
    ...peerRows(s),
    ["rotation", `/new p50 ${num(s, "rotation", "p50_ms")} p99 ${num(s, "rotation", "p99_ms")} ms; 100 concurrent: ${JSON.stringify(s.rotation?.concurrent)}`],
    [
      "memory",
      `RSS ${num(s, "memory", "rss_live_chats_mb")} MB at live chats (idle ${num(s, "memory", "rss_idle_mb")}); slope ${num(s, "memory", "soak_slope_bytes_per_min")} B/min; heap ${num(s, "memory", "heap_live_chats_mb")} MB at live chats, soak heap slope ${num(s, "memory", "soak_heap_slope_bytes_per_min")} B/min; after a full collection every ${num(s, "memory", "soak_collected_every_s")} s: RSS slope ${num(s, "memory", "soak_collected_slope_bytes_per_min")} B/min, heap ${num(s, "memory", "soak_collected_heap_slope_bytes_per_min")} B/min`,
    ],
    [
      "cli",
      `slowest command ${num(s, "cli", "slowest_wall_ms")} ms wall (median; CPU ${num(s, "cli", "slowest_cpu_ms")} ms); node -e "" ${nested(s, "cli", "node_floor", "wall_ms")} ms`,
    ],
    [
      "startup",
      `${num(s, "startup", "start_to_ready_ms")} ms to ready (median; CPU ${num(s, "startup", "cpu_to_ready_ms")} ms, RSS ${num(s, "startup", "rss_ready_mb")} MB); from source ${nested(s, "startup", "source", "start_to_ready_ms")} ms`,
    ],
    [
      "cross_process",
      `${num(s, "cross_process", "peak_sends_per_s")} Telegram sends in the busiest 1 s from three processes of one bot (limit 30); answered once, no 429: ${s.cross_process?.answered_once}`,
    ],
    [
      "telemetry",
      `off/on: start ${nested(s, "telemetry", "off", "start_to_ready_ms")}/${nested(s, "telemetry", "on", "start_to_ready_ms")} ms, RSS ${nested(s, "telemetry", "off", "rss_ready_mb")}/${nested(s, "telemetry", "on", "rss_ready_mb")} MB, core ${nested(s, "telemetry", "off", "msgs_per_s")}/${nested(s, "telemetry", "on", "msgs_per_s")} msgs/s, CPU ${nested(s, "telemetry", "off", "cpu_ms_per_msg")}/${nested(s, "telemetry", "on", "cpu_ms_per_msg")} ms/msg`,
    ],
  ];
}

export function table(doc: { date: string; quick: boolean; machine: Record<string, unknown>; scenarios: Scen; targets: Record<string, Target> }): string {
  const rows = scenarioRows(doc.scenarios);
  const w = Math.max(...rows.map((r) => r[0].length));
  const lines = [
    `switchboard bench ${doc.quick ? "(quick) " : ""}${doc.date} ${JSON.stringify(doc.machine)}`,
    ...rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`),
    "targets:",
  ];
  for (const t of Object.values(doc.targets)) lines.push(`  [${t.met ? "met" : "MISSED"}] ${t.target}: ${t.value}`);
  return lines.join("\n");
}
