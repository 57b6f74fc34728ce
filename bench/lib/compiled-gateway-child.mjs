// The gateway as `npm start` runs it, from the compiled build (dist/app/switchboard.cjs through
// bin/load-build.mjs with its code cache, as bin/switchboard.mjs loads it) with plain Node, so a memory figure is what an operator's process holds (no tsx, no
// TypeScript sources or source maps in the heap). Composed like bin/switchboard.mjs; with
// BENCH_LIFT_LIMITS=1 the adapters' declared rate limits are lifted (the fakes do not
// rate-limit). Answers the same IPC messages as gateway-child.ts.
import { fileURLToPath } from "node:url";
import v8 from "node:v8";
import vm from "node:vm";
import { loadBuild } from "../../bin/load-build.mjs";
import { unlimited } from "./unlimited.mjs";

const dist = process.env.BENCH_DIST ?? fileURLToPath(new URL("../../dist", import.meta.url));
const build = loadBuild(`${dist}/app/switchboard.cjs`, "serve");
const { runCli, adaptersFromConfig, loadConfig } = build.exports;

const list = await adaptersFromConfig(loadConfig());
if (process.env.BENCH_LIFT_LIMITS === "1") for (const a of list) unlimited(a);

// gc, turned on when first asked for (not --expose-gc: V8 refuses a code cache made under other
// flags than `npm start`'s, and the start would compile from source).
let collect;
const gc = () => {
  if (!collect) {
    v8.setFlagsFromString("--expose-gc");
    collect = vm.runInNewContext("gc");
  }
  collect();
};

process.on("message", (m) => {
  if (m?.snapshot) {
    gc();
    process.send?.({ snapshot: v8.writeHeapSnapshot(m.snapshot) });
    return;
  }
  // V8's heap spaces, for bench/lib/rss-attribution.ts (no GC: as they stand).
  if (m?.spaces) {
    process.send?.({ spaces: v8.getHeapSpaceStatistics() });
    return;
  }
  if (!m?.heap) return;
  if (m.heap === true) gc();
  process.send?.({ memory: process.memoryUsage() });
});
// `serve` stops on SIGTERM; the bench disconnects instead, as it does gateway-child.ts.
process.on("disconnect", () => process.kill(process.pid, "SIGTERM"));
const code = await runCli(["serve"], undefined, undefined, { adapters: () => list, codeCache: build.codeCache });
process.exit(code);
