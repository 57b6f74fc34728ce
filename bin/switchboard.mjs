#!/usr/bin/env node
// Entry point for `npx switchboard`, `npm run switchboard -- ...` and `npm start`.
// tsx compiles the TypeScript sources on the fly, so a fresh clone needs no build step.
// This is the composition root: it hands the adapters (adapters/) to the core (src/),
// which never imports them itself.
import { register } from "tsx/esm/api";

register();
const { runCli } = await import("../src/cli.ts");
const argv = process.argv.slice(2);
let adapters;
if (argv[0] === "serve") {
  const { adaptersFromConfig } = await import("../adapters/index.ts");
  const { loadConfig, ConfigError } = await import("../src/config.ts");
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
