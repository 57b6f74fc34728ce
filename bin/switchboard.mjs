#!/usr/bin/env node
// Entry point for `npx switchboard`, `npm run switchboard -- ...` and `npm start`.
// It runs the compiled build in dist/app/ (made by `npm install`, or `npm run build`) with
// plain Node: no TypeScript compiler at run time. SWITCHBOARD_FROM_SOURCE=1 runs the
// TypeScript sources through tsx instead (the tests do, so they always see the current
// code). This is the composition root: it hands the adapters (adapters/) to the core
// (src/), which never imports them itself.
import fs from "node:fs";

// `.env` in the working directory, as `.env.example` describes. Variables already in the
// environment win: Node's loader never overwrites one that is set.
if (fs.existsSync(".env")) {
  try {
    process.loadEnvFile(".env");
  } catch (e) {
    console.error(`switchboard: cannot read .env in ${process.cwd()}: ${e.message}`);
    process.exit(1);
  }
}

const fromSource = process.env.SWITCHBOARD_FROM_SOURCE === "1";
// The three modules this file composes: from the sources, or the build's entries (scripts/build.mjs).
let modules;
if (fromSource) {
  const { register } = await import("tsx/esm/api");
  register();
  const src = (p) => new URL(`../${p}`, import.meta.url).href;
  modules = { cli: src("src/cli.ts"), adapters: src("adapters/index.ts"), config: src("src/config.ts") };
} else {
  const app = (p) => new URL(`../dist/app/${p}`, import.meta.url);
  modules = { cli: app("cli.js").href, adapters: app("adapters.js").href, config: app("config.js").href };
  if (!fs.existsSync(app("cli.js"))) {
    console.error("switchboard: the compiled build (dist/) is missing: run `npm install` (or `npm run build`) in the project folder.");
    process.exit(1);
  }
}
const { runCli } = await import(modules.cli);
const argv = process.argv.slice(2);
let adapters;
if (argv[0] === "serve") {
  const { adaptersFromConfig } = await import(modules.adapters);
  const { loadConfig, ConfigError } = await import(modules.config);
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
const code = await runCli(argv, undefined, undefined, { adapters });
if (code !== 0) process.exitCode = code;
