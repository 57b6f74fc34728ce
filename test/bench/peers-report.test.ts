/**
 * The peers scenario's arithmetic: Switchboard's ratio to each peer, and the
 * issue 31 targets that compare it with the peers of the same run.
 */
import { describe, expect, it } from "vitest";
import { targets } from "../../bench/lib/report.js";
import { peerRatios, type SystemFigures } from "../../bench/scenarios/peers.js";

const figures = (o: { start: number; rss: number; rate: number; cpu: number; p50: number; p99: number; after: number }): SystemFigures => ({
  label: "x",
  start_to_first_reply_ms: o.start,
  first_start_ms: o.start,
  idle_rss_mb: o.rss,
  msgs_per_s: o.rate,
  cpu_ms_per_msg: o.cpu,
  rounds: [],
  paced_50: { n: 10, p50_ms: o.p50, p99_ms: o.p99, p999_ms: o.p99, max_ms: o.p99, offered_msgs_per_s: 50, cpu_ms_per_msg: o.cpu },
  rss_after_chats_mb: o.after,
  load_average_1min: 1,
});

const grammy = figures({ start: 200, rss: 60, rate: 1000, cpu: 0.5, p50: 1, p99: 4, after: 100 });
const chatSdk = figures({ start: 400, rss: 80, rate: 300, cpu: 3, p50: 3, p99: 9, after: 300 });
const echo = figures({ start: 300, rss: 120, rate: 800, cpu: 1, p50: 3, p99: 6, after: 240 });

describe("peers: ratios", () => {
  it("divides Switchboard's figure by each peer's, and is null for a skipped or failed peer", () => {
    const r = peerRatios(echo, { grammy, chat_sdk: { failed: "boom" }, openclaw: { skipped: "BENCH_PEERS_OPENCLAW=0" } });
    expect(r.msgs_per_s).toEqual({ vs_grammy: 0.8, vs_chat_sdk: null, vs_openclaw: null });
    expect(r.cpu_ms_per_msg.vs_grammy).toBe(2);
    expect(r.p99_50_ms.vs_grammy).toBe(1.5);
  });

  it("is null where a reduced peer has no paced run or RSS after the chats", () => {
    const openclaw = { ...figures({ start: 30_000, rss: 1300, rate: 2, cpu: 500, p50: 0, p99: 0, after: Number.NaN }), paced_50: null };
    const r = peerRatios(echo, { openclaw });
    expect(r.p99_50_ms.vs_openclaw).toBeNull();
    expect(r.rss_after_chats_mb.vs_openclaw).toBeNull();
    expect(r.start_to_first_reply_ms.vs_openclaw).toBe(0.01);
    // Hundreds of times apart: three significant digits, not a ratio rounded to 0.
    expect(r.cpu_ms_per_msg.vs_openclaw).toBe(0.002);
    expect(r.msgs_per_s.vs_openclaw).toBe(400);
  });

  it("is null everywhere when Switchboard itself did not run", () => {
    const r = peerRatios({ failed: "did not start" }, { grammy, chat_sdk: chatSdk });
    expect(Object.values(r).flatMap((x) => Object.values(x))).toEqual(Array(21).fill(null));
  });
});

describe("peers: issue 31 targets", () => {
  const scenarios = (systems: Record<string, unknown>) => ({ peers: { params: { chats: 2000 }, systems } });

  it("compares with the peers of the same run: grammY's CPU, the Chat SDK's p99 and RSS", () => {
    const t = targets(
      scenarios({ grammy, chat_sdk: chatSdk, switchboard_echo: echo, switchboard_model: { ...echo, paced_50: { ...echo.paced_50!, p99_ms: 12 } } }),
    );
    expect(t.i31_cpu_vs_grammy).toMatchObject({ value: 2, threshold: 1.5, met: false });
    expect(t.i31_p99_50_vs_chat_sdk).toMatchObject({ value: 6, threshold: 9, met: true });
    expect(t.i31_p99_50_model_vs_chat_sdk).toMatchObject({ value: 12, threshold: 9, met: false });
    expect(t.i31_rss_2000).toMatchObject({ value: 240, threshold: 300, met: true });
    expect(t.i31_rss_2000!.target).toContain("2,000 chats");
  });

  it("is never met when the peers did not run or a peer failed", () => {
    for (const t of [targets({}), targets(scenarios({ grammy: { failed: "x" }, chat_sdk: { skipped: "y" }, switchboard_echo: echo }))]) {
      for (const k of ["i31_cpu_vs_grammy", "i31_p99_50_vs_chat_sdk", "i31_rss_2000"]) expect(t[k]!.met, k).toBe(false);
    }
  });
});
