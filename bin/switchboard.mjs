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
  const { loadConfig } = await import("../src/config.ts");
  try {
    const list = await adaptersFromConfig(loadConfig());
    adapters = () => list;
  } catch {
    // A configuration error is reported by runCli itself, with the variable named.
  }
}
const code = await runCli(argv, undefined, undefined, { adapters });
if (code !== 0) process.exitCode = code;
