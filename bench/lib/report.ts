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
  };
}

export function table(doc: { date: string; quick: boolean; machine: Record<string, unknown>; scenarios: Scen; targets: Record<string, Target> }): string {
  const s = doc.scenarios;
  const rows: [string, string][] = [
    [
      "core_sqlite",
      `${num(s, "core_sqlite", "msgs_per_s")} msgs/s; @500/s p50 ${nested(s, "core_sqlite", "overhead_at_rate", "p50_ms")} p99 ${nested(s, "core_sqlite", "overhead_at_rate", "p99_ms")} p99.9 ${nested(s, "core_sqlite", "overhead_at_rate", "p999_ms")} ms; event-loop delay p99 ${nested(s, "core_sqlite", "overhead_causes", "event_loop_delay_p99_ms")} ms, GC max ${nested(s, "core_sqlite", "overhead_causes", "gc_max_ms")} ms; ${num(s, "core_sqlite", "statements_per_msg_steady")} statements/msg steady (${num(s, "core_sqlite", "statements_per_msg")} with new chats), ${num(s, "core_sqlite", "cpu_ms_per_msg")} CPU ms/msg`,
    ],
    [
      "core_postgres",
      `${num(s, "core_postgres", "msgs_per_s")} msgs/s; @500/s p50 ${nested(s, "core_postgres", "overhead_at_rate", "p50_ms")} p99 ${nested(s, "core_postgres", "overhead_at_rate", "p99_ms")} p99.9 ${nested(s, "core_postgres", "overhead_at_rate", "p999_ms")} ms; event-loop delay p99 ${nested(s, "core_postgres", "overhead_causes", "event_loop_delay_p99_ms")} ms, GC max ${nested(s, "core_postgres", "overhead_causes", "gc_max_ms")} ms; ${num(s, "core_postgres", "statements_per_msg_steady")} statements/msg steady (${num(s, "core_postgres", "statements_per_msg")} with new chats), ${num(s, "core_postgres", "cpu_ms_per_msg")} CPU ms/msg`,
    ],
    ["floor_sqlite", `${num(s, "floor_sqlite", "msgs_per_s")} msgs/s; core/floor ${num(s, "floor_sqlite", "ratio")}`],
    ["floor_postgres", `${num(s, "floor_postgres", "msgs_per_s")} msgs/s; core/floor ${num(s, "floor_postgres", "ratio")}`],
    ...(["telegram", "discord", "slack"] as const).map((p): [string, string] => [
      `e2e_${p}`,
      `${num(s, `e2e_${p}`, "msgs_per_s")} msgs/s p50 ${num(s, `e2e_${p}`, "p50_ms")} p99 ${num(s, `e2e_${p}`, "p99_ms")} ms; limits lifted ${nested(s, `e2e_${p}`, "unthrottled", "msgs_per_s")} msgs/s`,
    ]),
    [
      "peer_grammy_session",
      `${num(s, "peer_grammy_session", "msgs_per_s")} msgs/s; ratio ${num(s, "peer_grammy_session", "ratio")} (limits lifted ${num(s, "peer_grammy_session", "ratio_unthrottled")})`,
    ],
    ["rotation", `/new p50 ${num(s, "rotation", "p50_ms")} p99 ${num(s, "rotation", "p99_ms")} ms; 100 concurrent: ${JSON.stringify(s.rotation?.concurrent)}`],
    [
      "memory",
      `RSS ${num(s, "memory", "rss_live_chats_mb")} MB at live chats (idle ${num(s, "memory", "rss_idle_mb")}); slope ${num(s, "memory", "soak_slope_bytes_per_min")} B/min; heap ${num(s, "memory", "heap_live_chats_mb")} MB at live chats, soak heap slope ${num(s, "memory", "soak_heap_slope_bytes_per_min")} B/min`,
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
      "telemetry",
      `off/on: start ${nested(s, "telemetry", "off", "start_to_ready_ms")}/${nested(s, "telemetry", "on", "start_to_ready_ms")} ms, RSS ${nested(s, "telemetry", "off", "rss_ready_mb")}/${nested(s, "telemetry", "on", "rss_ready_mb")} MB, core ${nested(s, "telemetry", "off", "msgs_per_s")}/${nested(s, "telemetry", "on", "msgs_per_s")} msgs/s, CPU ${nested(s, "telemetry", "off", "cpu_ms_per_msg")}/${nested(s, "telemetry", "on", "cpu_ms_per_msg")} ms/msg`,
    ],
  ];
  const w = Math.max(...rows.map((r) => r[0].length));
  const lines = [
    `switchboard bench ${doc.quick ? "(quick) " : ""}${doc.date} ${JSON.stringify(doc.machine)}`,
    ...rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`),
    "targets:",
  ];
  for (const t of Object.values(doc.targets)) lines.push(`  [${t.met ? "met" : "MISSED"}] ${t.target}: ${t.value}`);
  return lines.join("\n");
}
