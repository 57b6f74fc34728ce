#!/usr/bin/env node
// Entry point for `npx switchboard`, `npm run switchboard -- ...` and `npm start`.
// It runs the compiled build in dist/app/ (made by `npm install`, or `npm run build`) with
// plain Node: no TypeScript compiler at run time. SWITCHBOARD_FROM_SOURCE=1 runs the
// TypeScript sources through tsx instead (the tests do, so they always see the current
// code). This is the composition root: it hands the adapters (adapters/) to the core
// (src/), which never imports them itself.
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { loadDotEnv } from "./dotenv.mjs";
import { loadBuild } from "./load-build.mjs";

loadDotEnv("switchboard");

const fromSource = process.env.SWITCHBOARD_FROM_SOURCE === "1";
// What this file composes: from the sources, or the build's one bundle (scripts/build.mjs).
let app;
let build;
if (fromSource) {
  const { register } = await import("tsx/esm/api");
  register();
  const src = (p) => new URL(`../${p}`, import.meta.url).href;
  const [cli, adapters, config] = await Promise.all([import(src("src/cli.ts")), import(src("adapters/index.ts")), import(src("src/config.ts"))]);
  app = { ...cli, ...adapters, ...config };
} else {
  const bundle = fileURLToPath(new URL("../dist/app/switchboard.cjs", import.meta.url));
  if (!fs.existsSync(bundle)) {
    console.error("switchboard: the compiled build (dist/) is missing: run `npm install` (or `npm run build`) in the project folder.");
    process.exit(1);
  }
  build = loadBuild(bundle, process.argv[2]);
  app = build.exports;
}
const { runCli, adaptersFromConfig, slackManifest, loadConfig, ConfigError } = app;
const argv = process.argv.slice(2);
let adapters;
if (argv[0] === "serve") {
  let config;
  try {
    config = loadConfig();
  } catch (e) {
    // runCli reports a configuration error itself, in one line naming the variable.
    if (!(e instanceof ConfigError)) throw e;
  }
  if (config) {
    try {
      const list = await adaptersFromConfig(config);
      adapters = () => list;
    } catch (e) {
      // An adapter refusing its settings stops the start: never a gateway without its adapters.
      process.stderr.write(`error: ${String(e?.message ?? e).replace(/[\r\n]+/g, " ")}\n`);
      process.exit(1);
    }
  }
}
const code = await runCli(argv, undefined, undefined, { adapters, codeCache: build?.codeCache, slackManifest });
if (code !== 0) process.exitCode = code;
