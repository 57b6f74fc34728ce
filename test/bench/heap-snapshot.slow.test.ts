import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { analyseHeapSnapshot } from "../../bench/lib/heap-snapshot.js";

// A process whose heap is known: 2,000 chat windows of 50 strings each (about 8 MB) held by
// one Pool on a global, and a WeakRef to the pool's Map, which must not count as a second owner.
const program = `
const v8 = require("node:v8");
class ChatWindow { constructor(i) { this.lines = Array.from({ length: 50 }, (_, j) => "line " + i + " " + j + " " + "x".repeat(40)); } }
class Pool { constructor(n) { this.windows = new Map(); for (let i = 0; i < n; i++) this.windows.set("chat" + i, new ChatWindow(i)); } }
globalThis.pool = new Pool(2000);
globalThis.weak = new WeakRef(globalThis.pool.windows);
// A WeakRef's target is kept to the end of the job that made it: snapshot in a later one.
setTimeout(() => { v8.writeHeapSnapshot(process.argv[1]); }, 10);
`;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "heap-snapshot-test-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("bench/lib/heap-snapshot", () => {
  it("names what retains the heap, with its retained size and the path to it", () => {
    const file = path.join(dir, "known.heapsnapshot");
    execFileSync(process.execPath, ["-e", program, file]);
    const report = analyseHeapSnapshot(file, 5);
    const top = report.top_retainers[0]!;
    // The global object holds the pool, which holds a Map with nearly all of it: the Map is named, with its owners.
    // (Were the WeakRef counted, the Map would have two owners and hang from the global object directly.)
    expect(top.what).toBe("Map");
    expect(top.path.slice(-2)).toEqual(["global.pool", "Pool.windows"]);
    // 100,000 strings of ~55 characters plus 2,000 arrays and objects: several MB, most of the heap.
    expect(top.retained_mb).toBeGreaterThan(5);
    expect(top.retained_mb).toBeLessThan(report.total_mb);
    // The 100,000 lines are the heap's bulk by self size, largest first.
    const selfSizes = report.by_constructor.map((c) => c.self_mb);
    expect(selfSizes).toEqual([...selfSizes].sort((a, b) => b - a));
    const strings = report.by_constructor.filter((c) => c.what.startsWith("(string)") || c.what.startsWith("(concatenated string)"));
    expect(strings.reduce((a, c) => a + c.count, 0)).toBeGreaterThanOrEqual(100_000);
  });
});
