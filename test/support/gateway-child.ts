// A gateway process for crash tests: the real app with the loopback adapter,
// configured from the environment. Prints READY once serving.
import { loadConfig } from "../../src/config.js";
import { createApp } from "../../src/gateway/app.js";
import { createLogger } from "../../src/log.js";
import { LoopbackAdapter } from "./loopback-adapter.js";

const config = loadConfig();
const app = await createApp(config, { log: createLogger({ level: "warn" }), adapters: () => [new LoopbackAdapter(process.env.LOOPBACK_URL!)], retryIntervalMs: 500 });
await app.start();
process.stdout.write("READY\n");
process.on("SIGTERM", () => void app.stop().then(() => process.exit(0)));
