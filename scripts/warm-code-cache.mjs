// `node scripts/warm-code-cache.mjs dist/app/switchboard.cjs` (run by scripts/build.mjs): loads
// the bundle, evaluates every module a start evaluates (warmUp, the build's entry) without
// connecting anything, and writes the build's code cache from what V8 compiled meanwhile.
import path from "node:path";
import { loadBuild } from "../bin/load-build.mjs";

const bundle = path.resolve(process.argv[2]);
const build = loadBuild(bundle);
await build.exports.warmUp();
build.codeCache.save("build");
process.exit(0);
