/**
 * Issue 31's soak target: met only by the soak the issue names, 30 minutes over chats whose
 * windows were all full when it began, whatever the slope of a shorter or emptier one.
 */
import { describe, expect, it } from "vitest";
import { targets } from "../../bench/lib/report.js";

const MB = 2 ** 20;
const memory = (minutes: number, slopeMb: number, windows: { sessions: number; full: number }) => ({
  memory: {
    params: { soak_seconds: minutes * 60 },
    soak_collected_slope_bytes_per_min: slopeMb * MB,
    soak_windows: { ...windows, window: 40 },
  },
});

describe("bench: issue 31's soak slope", () => {
  it("is met by a flat 30-minute soak over full windows", () => {
    const t = targets(memory(30, 0.2, { sessions: 10_000, full: 10_000 })).i31_soak_slope!;
    expect(t).toMatchObject({ value: 0.2, threshold: 0.5, met: true });
    expect(t.target).toContain("this run: 30-minute soak, windows full");
  });

  it("is not met by a shorter soak, however flat", () => {
    const t = targets(memory(5, 0.1, { sessions: 10_000, full: 10_000 })).i31_soak_slope!;
    expect(t).toMatchObject({ value: 0.1, met: false });
    expect(t.target).toContain("this run: 5-minute soak");
  });

  it("is not met when some windows were still filling, and says how many were full", () => {
    const t = targets(memory(30, 0.1, { sessions: 10_000, full: 9_990 })).i31_soak_slope!;
    expect(t.met).toBe(false);
    expect(t.target).toContain("windows full in 9990 of 10000 chats");
  });

  it("is not met by a slope above 0.5 MB/min, falling or rising", () => {
    expect(targets(memory(30, 0.6, { sessions: 10, full: 10 })).i31_soak_slope!.met).toBe(false);
    expect(targets(memory(30, -0.6, { sessions: 10, full: 10 })).i31_soak_slope).toMatchObject({ value: 0.6, met: false });
  });

  it("is not met when the bench did not run the soak", () => {
    expect(targets({}).i31_soak_slope!.met).toBe(false);
  });
});
