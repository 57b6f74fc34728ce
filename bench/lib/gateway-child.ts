// The gateway as `switchboard serve` composes it (adapters from the env), in its own
// process so its RSS can be read alone. With BENCH_LIFT_LIMITS=1 the adapters'
// declared rate limits are lifted (the fakes do not rate-limit), so a memory
// figure measures what live chats cost, not a backlog of paced replies.
import { adaptersFromConfig } from "../../adapters/index.js";
import { unlimited } from "./unlimited.js";
import { loadConfig } from "../../src/config.js";
import { createApp } from "../../src/gateway/app.js";
import { silentLogger } from "../../src/log.js";

const config = loadConfig();
const list = await adaptersFromConfig(config);
if (process.env.BENCH_LIFT_LIMITS === "1") for (const a of list) unlimited(a);
const app = await createApp(config, { log: silentLogger, adapters: () => list });
const url = await app.start();
process.send?.({ url });
// {heap: true} asks for process.memoryUsage() after a full GC when --expose-gc is on (what is live, not what waits for collection).
process.on("message", (m: { heap?: boolean | "sample" }) => {
  if (!m?.heap) return;
  if (m.heap === true) (globalThis as { gc?: () => void }).gc?.();
  process.send?.({ memory: process.memoryUsage() });
});
process.on("disconnect", () => {
  void app.stop().finally(() => process.exit(0));
});
