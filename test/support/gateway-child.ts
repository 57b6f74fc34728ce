// A gateway process for crash tests: the real app with the loopback adapter,
// configured from the environment. Prints READY once serving.
import { loadConfig } from "../../src/config.js";
import { createApp } from "../../src/gateway/app.js";
import { createLogger } from "../../src/log.js";
import { LoopbackAdapter } from "./loopback-adapter.js";

const config = loadConfig();
const mode = process.env.LOOPBACK_MODE === "webhook" ? "webhook" : "poll";
const app = await createApp(config, { log: createLogger({ level: "warn" }), adapters: () => [new LoopbackAdapter(process.env.LOOPBACK_URL!, mode)], retryIntervalMs: 500 });
const url = await app.start();
process.stdout.write(`READY ${url}\n`);
process.on("SIGTERM", () => void app.stop().then(() => process.exit(0)));
