// A gateway process for crash tests: the real app with the loopback adapter,
// configured from the environment. Prints READY once serving.
import { loadConfig } from "../../src/config.js";
import { createApp } from "../../src/gateway/app.js";
import { createLogger } from "../../src/log.js";
import type { Agent } from "../../src/agent/types.js";
import { LoopbackAdapter } from "./loopback-adapter.js";

const config = loadConfig();
const mode = process.env.LOOPBACK_MODE === "webhook" ? "webhook" : "poll";
// TEST_AGENT=settings: the answer names the settings the turn was built with (model, temperature, max tokens, persona, turns) and the process.
const settingsAgent = (metadata: Record<string, unknown>, ctx: { session: { persona?: string; turnCount: number } }): Agent => ({
  name: "settings",
  async *run() {
    const m = (k: string) => String(metadata[k] ?? "-");
    yield {
      type: "done",
      text: `settings: model=${m("model.name")} temperature=${m("model.temperature")} maxtokens=${m("model.max_output_tokens")} persona=${ctx.session.persona ?? "default"} turns=${ctx.session.turnCount} pid=${process.pid}`,
      toolRounds: 0,
    };
  },
});
const app = await createApp(config, {
  log: createLogger({ level: "warn" }),
  adapters: () => [new LoopbackAdapter(process.env.LOOPBACK_URL!, mode)],
  retryIntervalMs: 500,
  ...(process.env.TEST_AGENT === "settings" ? { agentFactory: settingsAgent } : {}),
});
const url = await app.start();
process.stdout.write(`READY ${url}\n`);
// SIGTERM finishes the running turns and sends the queued replies first, so a test that stops the
// process and waits for its exit has seen every reply it would ever send.
process.on("SIGTERM", () => void app.stop({ graceMs: 30_000 }).then(() => process.exit(0)));
