/**
 * Issue 30, acceptance 4: what telemetry costs, off and on side by side in
 * one run. On = exporting over OTLP/HTTP (protobuf, the default) to a local
 * receiver that takes every export and discards it. The compiled gateway's
 * start (to /healthz ready) and its RSS when ready; the core (in this
 * process, SQLite, the core scenario's workload and window) msgs/s and CPU
 * ms per message, off and on alternated (off, on, off, on...) so a busy
 * machine's drift hits both, medians reported, and the ratio: the cost per
 * message of tracing every message.
 *
 * "Off is within noise of before": the off figures here against the same
 * scenario's figures on the revision before telemetry (which has no
 * telemetry scenario: compare its core_sqlite and startup instead) with
 * `npm run bench:compare`.
 */
import { execFileSync } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { ROOT } from "../lib/child.js";
import { freshSqliteUrl, freshUrl } from "../lib/db.js";
import { pick } from "../lib/mode.js";
import type { PlatformDriver } from "../lib/platforms.js";
import { progress } from "../lib/progress.js";
import { median, r1, r3, sleep, windowRates } from "../lib/stats.js";
import { CoreDriver, coreParams } from "./core.js";
import { measure } from "./startup.js";

/** An OTLP/HTTP endpoint that answers 200 to every export and keeps nothing but counts. */
async function discardingReceiver(): Promise<{ url: string; exports: number; bytes: number; close(): Promise<void> }> {
  const state = { exports: 0, bytes: 0 };
  const server = http.createServer((req, res) => {
    req.on("data", (c: Buffer) => (state.bytes += c.length));
    req.on("end", () => {
      state.exports++;
      res.writeHead(200, { "content-type": String(req.headers["content-type"] ?? "application/x-protobuf") }).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get exports() {
      return state.exports;
    },
    get bytes() {
      return state.bytes;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** One closed-loop core run (SQLite): msgs/s (median of the windows' rates) and this process's CPU ms per message. */
async function coreRun(env: Record<string, string>, quick: boolean, label: string): Promise<{ msgs_per_s: number; cpu_ms_per_msg: number }> {
  const p = coreParams(quick);
  const d = new CoreDriver();
  await d.start(await freshUrl("sqlite"), undefined, undefined, env);
  try {
    const cpu0 = process.cpuUsage();
    const { doneAt } = await d.closedLoop(0, p.messages, p.chats, p.window, label, p.maxSeconds);
    const cpu = process.cpuUsage(cpu0);
    return { msgs_per_s: r1(median(windowRates(doneAt, 10))), cpu_ms_per_msg: r3((cpu.user + cpu.system) / 1000 / doneAt.length) };
  } finally {
    await d.stop();
  }
}

/** `built`: the startup scenario already rebuilt the compiled gateway in this run. */
export async function runTelemetry(quick: boolean, drivers: PlatformDriver[], built = false) {
  const receiver = await discardingReceiver();
  const on = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url };
  try {
    if (!built) execFileSync(process.execPath, [path.join(ROOT, "scripts/build.mjs")], { cwd: ROOT, stdio: "ignore" });
    const runs = pick(quick, 5, 3, 1);
    const db = freshSqliteUrl();
    progress("telemetry: start, off");
    const startOff = await measure(runs, 1, db, drivers, false);
    progress("telemetry: start, on");
    const startOn = await measure(runs, 1, db, drivers, false, undefined, on);
    const pairs = pick(quick, 3, 2, 1);
    const off: Array<{ msgs_per_s: number; cpu_ms_per_msg: number }> = [];
    const onRuns: typeof off = [];
    for (let i = 0; i < pairs; i++) {
      off.push(await coreRun({}, quick, `telemetry core off ${i + 1}/${pairs}`));
      await sleep(200);
      onRuns.push(await coreRun(on, quick, `telemetry core on ${i + 1}/${pairs}`));
      await sleep(200);
    }
    const core = (xs: typeof off) => ({ msgs_per_s: r1(median(xs.map((x) => x.msgs_per_s))), cpu_ms_per_msg: r3(median(xs.map((x) => x.cpu_ms_per_msg))) });
    const coreOff = core(off);
    const coreOn = core(onRuns);
    const pick2 = (m: typeof startOff) => ({ start_to_ready_ms: m.start_to_ready_ms, cpu_to_ready_ms: m.cpu_to_ready_ms, rss_ready_mb: m.rss_ready_mb });
    return {
      params: {
        quick,
        start_runs: runs,
        core_pairs: pairs,
        core: "SQLite, in process, the core scenario's closed loop (its messages, chats, window and time cap)",
        on: "OTLP/HTTP protobuf to a local receiver that answers 200 and discards",
      },
      off: { ...pick2(startOff), ...coreOff, core_runs: off },
      on: { ...pick2(startOn), ...coreOn, core_runs: onRuns },
      ratio: {
        start_to_ready: r3(startOn.start_to_ready_ms / startOff.start_to_ready_ms),
        rss_ready: r3(startOn.rss_ready_mb / startOff.rss_ready_mb),
        msgs_per_s: r3(coreOn.msgs_per_s / coreOff.msgs_per_s),
        cpu_ms_per_msg: r3(coreOn.cpu_ms_per_msg / coreOff.cpu_ms_per_msg),
      },
      /** What tracing one message costs in CPU on top of the core's own. */
      on_cost_cpu_ms_per_msg: r3(coreOn.cpu_ms_per_msg - coreOff.cpu_ms_per_msg),
      exported: { requests: receiver.exports, kb: r1(receiver.bytes / 1024) },
    };
  } finally {
    await receiver.close();
  }
}
