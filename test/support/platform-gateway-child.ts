// A gateway process as `switchboard serve` composes it (adapters from the configuration), for
// restart tests against the platform fakes. Prints READY once serving.
import { adaptersFromConfig } from "../../adapters/index.js";
import { loadConfig } from "../../src/config.js";
import { createApp } from "../../src/gateway/app.js";
import { createLogger } from "../../src/log.js";

const config = loadConfig();
const adapters = await adaptersFromConfig(config);
const app = await createApp(config, { log: createLogger({ level: "warn" }), adapters: () => adapters, retryIntervalMs: 500 });
const url = await app.start();
process.stdout.write(`READY ${url}\n`);
process.on("SIGTERM", () => void app.stop().then(() => process.exit(0)));
