import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { figure, performanceSections, type BenchDoc } from "../../bench/lib/readme-sections.js";
import { targets } from "../../bench/lib/report.js";
import { BEGIN, END, replaceBlock } from "../../bench/readme-table.js";

const scenarios = {
  core_sqlite: { msgs_per_s: 1580, overhead_at_rate: { p50_ms: 1.4, p99_ms: 14.8, p999_ms: 29 }, statements_per_msg_steady: 7.1, cpu_ms_per_msg: 0.69 },
  floor_sqlite: { msgs_per_s: 3516, ratio: 0.45 },
};
const doc: BenchDoc = {
  date: "2026-12-07T03:00:00.000Z",
  quick: false,
  duration_s: 1234,
  machine: { cpus: 2, memGB: 24, node: "v20.20.2", cpuModel: "AMD EPYC" },
  load_average: { start: [0.2, 0.5, 0.9], end: [1.8, 1.5, 1.2] },
  scenarios,
  targets: targets(scenarios),
};

describe("bench:readme (the README's Performance figures from a bench document)", () => {
  it("prints every target with its value, threshold and verdict, and says which were not measured", () => {
    const out = performanceSections(doc);
    for (const [key, t] of Object.entries(doc.targets)) {
      const row = out.split("\n").find((l) => l.includes(`(\`${key}\`)`));
      expect(row, key).toBeDefined();
      expect(row).toContain(t.met ? "| met |" : "| **missed** |");
    }
    expect(out).toContain("| core/floor >= 0.8 (sqlite) (`floor_ratio_sqlite`) | 0.45 | 0.8 | **missed** |");
    // Not in the document: never "met", and shown as such rather than as NaN.
    expect(out).toMatch(/\(`start_to_ready`\) \| not measured \| 500 \| \*\*missed\*\* \|/);
    expect(out).not.toContain("NaN");
    expect(out).toContain("load average (1/5/15 min) 0.2 / 0.5 / 0.9 at the start, 1.8 / 1.5 / 1.2 at the end");
    expect(out).toMatch(/Targets: \d+ of \d+ met/);
  });

  it("says a run of some scenarios is partial, and a quick one quick", () => {
    expect(performanceSections({ ...doc, only: ["core_sqlite"] })).toMatch(/^Partial run \(--only=core_sqlite\), 2026-12-07/);
    expect(performanceSections({ ...doc, quick: true })).toMatch(/^Quick run, /);
    expect(performanceSections(doc)).toMatch(/^Full run, 2026-12-07T03:00:00.000Z: 2 cores \(AMD EPYC\), 24 GB, Node v20.20.2; 1,234 s;/);
  });

  it("has a scenario row only for the scenarios that ran", () => {
    const out = performanceSections(doc);
    expect(out).toMatch(/^\| core_sqlite \| 1580 msgs\/s/m);
    expect(out).not.toMatch(/^\| memory \|/m);
  });

  it("tables the peers as issue 31 did: one row a system, a skipped one with its reason", () => {
    const peers = {
      params: { chats: 2000 },
      systems: {
        grammy: {
          label: "grammY, plain bot",
          start_to_first_reply_ms: 244,
          idle_rss_mb: 62,
          msgs_per_s: 1070,
          cpu_ms_per_msg: 0.46,
          paced_50: { p50_ms: 1.2, p99_ms: 4.8 },
          rss_after_chats_mb: 120,
        },
        openclaw: { skipped: "BENCH_PEERS_OPENCLAW=0" },
      },
    };
    const out = performanceSections({ ...doc, scenarios: { ...scenarios, peers } });
    expect(out).toContain(
      "| system | start to first reply | idle RSS | unpaced msgs/s (CPU ms/msg) | p50 / p99 at a paced 50 msgs/s | RSS after 2,000 chats |",
    );
    expect(out).toContain("| grammY, plain bot | 244 ms | 62 MB | 1,070 (0.46) | 1.2 / 4.8 ms | 120 MB |");
    expect(out).toContain("| openclaw | skipped: BENCH_PEERS_OPENCLAW=0 | | | | |");
    expect(performanceSections(doc)).not.toContain("| system |");
  });

  it("formats figures for reading", () => {
    expect(figure(12345.678)).toBe("12,346");
    expect(figure(14.83)).toBe("14.8");
    expect(figure(0.4567)).toBe("0.457");
    expect(figure(Number.NaN)).toBe("not measured");
    expect(figure(null)).toBe("not measured");
  });

  it("replaces only what lies between the markers, and again to the same result", () => {
    const readme = `# x\n\nbefore\n${BEGIN}\nold table\n${END}\nafter\n`;
    const once = replaceBlock(readme, "new table");
    expect(once).toBe(`# x\n\nbefore\n${BEGIN}\n\nnew table\n\n${END}\nafter\n`);
    expect(replaceBlock(once, "new table")).toBe(once);
  });

  it("refuses a README without the markers, or with them twice, and says how to fix it", () => {
    expect(() => replaceBlock("no markers", "x")).toThrow(/needs the markers once each/);
    expect(() => replaceBlock(`${BEGIN}\n${END}\n${BEGIN}\n${END}`, "x")).toThrow(/put them around the Performance figures/);
    expect(() => replaceBlock(`${END}\n${BEGIN}`, "x")).toThrow(/in order/);
  });

  it("the README has the markers, so `npm run bench:readme` can write its figures", () => {
    const readme = fs.readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    expect(() => replaceBlock(readme, "x")).not.toThrow();
  });
});
