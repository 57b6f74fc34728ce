#!/usr/bin/env node
// Entry point for `npx switchboard`, `npm run switchboard -- ...` and `npm start`.
// tsx compiles the TypeScript sources on the fly, so a fresh clone needs no build step.
import { register } from "tsx/esm/api";

register();
const { runCli } = await import("../src/cli.ts");
const code = await runCli(process.argv.slice(2));
if (code !== 0) process.exitCode = code;
