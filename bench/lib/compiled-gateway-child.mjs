// The gateway as `npm start` runs it, from the compiled build (dist/app/, scripts/build.mjs)
// with plain Node, so a memory figure is what an operator's process holds (no tsx, no
// TypeScript sources or source maps in the heap). Composed like bin/switchboard.mjs; with
// BENCH_LIFT_LIMITS=1 the adapters' declared rate limits are lifted (the fakes do not
// rate-limit). Answers the same IPC messages as gateway-child.ts.
import v8 from "node:v8";
import { unlimited } from "./unlimited.mjs";

const dist = (file) => new URL(`../../dist/app/${file}`, import.meta.url).href;
const { runCli } = await import(dist("cli.js"));
const { adaptersFromConfig } = await import(dist("adapters.js"));
const { loadConfig } = await import(dist("config.js"));

const list = await adaptersFromConfig(loadConfig());
if (process.env.BENCH_LIFT_LIMITS === "1") for (const a of list) unlimited(a);

process.on("message", (m) => {
  if (m?.snapshot) {
    globalThis.gc?.();
    process.send?.({ snapshot: v8.writeHeapSnapshot(m.snapshot) });
    return;
  }
  if (!m?.heap) return;
  if (m.heap === true) globalThis.gc?.();
  process.send?.({ memory: process.memoryUsage() });
});
// `serve` stops on SIGTERM; the bench disconnects instead, as it does gateway-child.ts.
process.on("disconnect", () => process.kill(process.pid, "SIGTERM"));
const code = await runCli(["serve"], undefined, undefined, { adapters: () => list });
process.exit(code);
