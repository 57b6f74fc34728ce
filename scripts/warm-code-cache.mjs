// `node scripts/warm-code-cache.mjs <bundle> serve|cli` (run by scripts/build.mjs, once for
// each, each in a fresh process so a cache holds only what its kind runs): loads the bundle,
// warms it, and writes that kind's code cache (bin/load-build.mjs) from what V8 compiled.
// serve: evaluates every module a start evaluates (warmUp, the build's entry), connecting
// nothing. cli: runs the read-only commands against a throwaway SQLite database.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadBuild } from "../bin/load-build.mjs";

const bundle = path.resolve(process.argv[2]);
const kind = process.argv[3];
// From source: a cache read in would end up, whole, in the one written.
const build = loadBuild(bundle, kind, { readCache: false });
if (kind === "serve") {
  await build.exports.warmUp();
} else if (kind === "cli") {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-warm-"));
  const env = { DATABASE_URL: `file:${path.join(dir, "warm.db")}` };
  const failed = [];
  const io = { out() {}, err: (line) => failed.push(line) };
  try {
    for (const argv of [["migrate"], ["migrate", "--dry-run"], ["sessions", "list"], ["pairing", "list"], ["schedule", "list"], ["--help"]]) {
      const code = await build.exports.runCli([...argv, "--json"], io, env);
      if (code !== 0) throw new Error(`build: warming the code cache, \`${argv.join(" ")}\` exited ${code}: ${failed.join(" ")}`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
} else {
  throw new Error(`build: warm-code-cache.mjs wants serve or cli, not ${kind}`);
}
build.codeCache.save(kind === "serve" ? "build" : "cli");
process.exit(0);
