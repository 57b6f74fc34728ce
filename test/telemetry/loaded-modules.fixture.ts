/**
 * Run as a process of its own (test/telemetry/off.slow.test.ts): starts and
 * stops the app with the configuration given as JSON in argv[3] on the SQLite
 * file argv[2], and prints which @opentelemetry packages were loaded.
 */
import { createRequire } from "node:module";
import { loadConfig } from "../../src/config.js";
import { createApp } from "../../src/gateway/app.js";
import { silentLogger } from "../../src/log.js";

const config = loadConfig({ DATABASE_URL: `file:${process.argv[2]}`, HTTP_PORT: "0", LOG_LEVEL: "silent", ...JSON.parse(process.argv[3] ?? "{}") });
const app = await createApp(config, { log: silentLogger });
await app.start();
const loaded = Object.keys(createRequire(import.meta.url).cache).flatMap((p) => /node_modules\/(@opentelemetry\/[^/]+)\//.exec(p)?.[1] ?? []);
await app.stop();
console.log(JSON.stringify([...new Set(loaded)].sort()));
