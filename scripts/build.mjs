// The production build (`npm run build`; `npm install` runs it as `prepare`): src/ and
// adapters/, with the generated Prisma clients and every dependency esbuild can inline,
// bundled into one CommonJS file in dist/app/, plus the files the code reads at run time
// beside them. The running gateway then needs no TypeScript compiler (bin/switchboard.mjs
// loads dist/app/). Transpiling only: `npm run typecheck` (part of `npm test`) checks types.
//
// Why one CommonJS bundle (dist/app/switchboard.cjs): Node resolves and reads a package's
// CommonJS file by file (discord.js, Bolt and grammY are about 1,500 files), and V8's code
// cache (bin/load-build.mjs runs the bundle through vm.Script with it) takes a script, not an
// ES module. Commands and adapters stay lazy inside it: each import() of bundled code becomes a
// module initialised on first use, so a CLI call evaluates no platform SDK and an adapter that
// is not configured is never run. The build writes the bundle's first code cache at the end.
// See "The build" in docs/DESIGN.md.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { patched, SDK_PATCHES } from "./build-patches.mjs";
import { linkBin } from "./link-bin.mjs";
import { SERVE_NODE_FLAGS } from "./serve-process.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// --out-dir=DIR builds elsewhere (test/build.slow.test.ts builds into a throwaway folder).
const outArg = process.argv.find((a) => a.startsWith("--out-dir="));
const dist = outArg ? path.resolve(outArg.slice("--out-dir=".length)) : path.join(root, "dist");

// node_modules/.bin/switchboard, for `npx switchboard` (scripts/link-bin.mjs says why here):
// every install links it, production installs included, before anything needs the build tools.
linkBin(root);

let esbuild;
try {
  esbuild = createRequire(import.meta.url)("esbuild");
} catch {
  // `npm ci --omit=dev` (a production install) runs this too, without the build tools: the
  // build must come from elsewhere (the Dockerfile copies it from its build stage).
  console.log(
    fs.existsSync(path.join(dist, "app", "switchboard.cjs"))
      ? "build: esbuild is not installed (production install): using the dist/ already here."
      : "build: esbuild is not installed (production install) and there is no dist/ yet: copy a build into dist/ (npm run build on a full install) before starting.",
  );
  process.exit(0);
}

if (!fs.existsSync(path.join(root, "src", "store", "generated", "sqlite", "client.ts"))) {
  console.error("build: the Prisma clients are missing (src/store/generated): run `npm run db:generate` first.");
  process.exit(1);
}

// Left to Node at run time, from node_modules: native addons (better-sqlite3 and its loader),
// optional accelerators the SDKs probe for with try/require, and abort-controller, whose
// polyfill grammY's node-fetch rejects once both are inlined (getMe fails with a TypeError).
// pino-pretty and pg are loaded through createRequire (src/log.ts, src/store/sql.ts), which
// esbuild leaves alone: each costs a start only when it is used. gpt-tokenizer (2.8 MB of
// encoding tables, a quarter of the bundle) is loaded only when a provider reports no usage
// (src/agent/token-estimate.ts): inlined, every start would read it and hold it in memory.
const EXTERNAL = new Set([
  "gpt-tokenizer",
  "better-sqlite3",
  "bindings",
  "abort-controller",
  "pg-native",
  "zlib-sync",
  "bufferutil",
  "utf-8-validate",
  "erlpack",
  "@discordjs/voice",
]);
const pkgName = (spec) => (spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]);
const OWN = [path.join(root, "src") + path.sep, path.join(root, "adapters") + path.sep];

// Copies of one version of a package in more than one place of the install, from the lockfile:
// each non-first place (by path) maps to the first, which the bundle then holds alone.
const DEDUPE = Symbol("dedupe");
const SAME_VERSION = new Map();
{
  const byVersion = new Map();
  const lockPackages = JSON.parse(fs.readFileSync(path.join(root, "package-lock.json"), "utf8")).packages ?? {};
  for (const [where, entry] of Object.entries(lockPackages)) {
    if (!where.includes("node_modules/") || entry.link || !entry.version) continue;
    const key = `${where.slice(where.lastIndexOf("node_modules/") + "node_modules/".length)}@${entry.version}`;
    byVersion.set(key, [...(byVersion.get(key) ?? []), where]);
  }
  for (const places of byVersion.values()) {
    const [first, ...rest] = places.sort((a, b) => a.length - b.length || a.localeCompare(b));
    for (const p of rest) if (fs.existsSync(path.join(root, p)) && fs.existsSync(path.join(root, first))) SAME_VERSION.set(p, first);
  }
}

const plugin = {
  name: "switchboard",
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (EXTERNAL.has(pkgName(args.path))) return { path: args.path, external: true };
      if (args.pluginData === DEDUPE) return undefined;
      // npm nests a second copy of the same version of a package (undici 6 under discord.js
      // and under @discordjs/rest): bundled twice, it would be evaluated twice at every start.
      const r = await build.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: DEDUPE });
      // Not found (an optional probe in a try/catch) or external: esbuild's own resolution, as before.
      if (r.errors.length || r.external) return undefined;
      const m = /^(.*[\\/]node_modules[\\/](?:@[^\\/]+[\\/])?[^\\/]+)([\\/].*)$/.exec(r.path);
      const canonical = m && SAME_VERSION.get(path.relative(root, m[1]).split(path.sep).join("/"));
      return canonical ? { ...r, path: path.join(root, canonical) + m[2] } : r;
    });
    // Our modules find their files (migrations, the console's assets, the login page) and
    // resolve packages relative to import.meta.url. Bundled, that is the bundle's URL in
    // dist/app/; each module gets its own original place instead (dist/<its path>), where
    // the files are copied below.
    // Prisma's query compilers (a 4.4 MB base64 string per provider) would be read and parsed
    // at every start, though Prisma is loaded only off the hot path (src/store/db.ts): each
    // goes beside the bundle as a file, read when Prisma is first used.
    build.onLoad({ filter: /query_compiler_[a-z]+_bg\.[a-z]+\.wasm-base64\.mjs$/ }, (args) => {
      const name = path.basename(args.path).replace(/\.wasm-base64\.mjs$/, ".wasm");
      const base64 = /"([A-Za-z0-9+/=]+)"/.exec(fs.readFileSync(args.path, "utf8"))?.[1];
      if (!base64) throw new Error(`build: no base64 wasm in ${args.path}`);
      fs.mkdirSync(path.join(dist, "app"), { recursive: true });
      fs.writeFileSync(path.join(dist, "app", name), Buffer.from(base64, "base64"));
      return {
        contents: `export const wasm = require("node:fs").readFileSync(require("node:path").join(__dirname, ${JSON.stringify(name)})).toString("base64");`,
        loader: "js",
      };
    });
    // SDK lines that load at every start what a Node gateway never uses (scripts/build-patches.mjs).
    for (const patch of SDK_PATCHES) {
      build.onLoad({ filter: patch.file }, (args) => ({ contents: patched(args.path, fs.readFileSync(args.path, "utf8"), patch), loader: "js" }));
    }
    build.onLoad({ filter: /\.ts$/ }, (args) => {
      if (!OWN.some((d) => args.path.startsWith(d))) return undefined;
      let text = fs.readFileSync(args.path, "utf8");
      if (text.includes("import.meta.url")) {
        const rel = `../${path.relative(root, args.path).split(path.sep).join("/")}`;
        text = text.replaceAll("import.meta.url", `new URL(${JSON.stringify(rel)}, __switchboardBundleUrl).href`);
      }
      return { contents: text, loader: "ts" };
    });
  },
};

const started = performance.now();
fs.rmSync(dist, { recursive: true, force: true });
const result = await esbuild.build({
  absWorkingDir: root,
  // The bundle's entry: what bin/switchboard.mjs composes, and warmUp, which evaluates every
  // module a start evaluates, for the build's code cache (scripts/warm-code-cache.mjs).
  stdin: {
    contents: [
      'export { runCli } from "./src/cli.ts";',
      'export { loadConfig, ConfigError } from "./src/config.ts";',
      'export { adaptersFromConfig, slackManifest } from "./adapters/index.ts";',
      "export async function warmUp() {",
      '  await Promise.all([import("./src/main.ts"), import("./adapters/telegram/index.ts"), import("./adapters/discord/index.ts"), import("./adapters/slack/index.ts"), import("./adapters/console/index.ts"), import("./src/store/migrate.ts")]);',
      "}",
    ].join("\n"),
    resolveDir: root,
    sourcefile: "switchboard-entry.ts",
    loader: "ts",
  },
  outfile: path.join(dist, "app", "switchboard.cjs"),
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  // Class and function names stay what they were: discord.js looks up its cache limits by a
  // manager's class name (Options.cacheWithLimits), and esbuild renamed MessageManager's
  // class to _MessageManager, so the limit of 0 cached messages was ignored and every
  // message of every channel stayed in memory (34,000 Message objects, 73 MB, in the
  // memory bench's heap snapshot).
  keepNames: true,
  // import() of what stays outside (better-sqlite3, pg, Node's built-ins) becomes require():
  // code run through vm.Script has no dynamic import without an experimental flag.
  supported: { "dynamic-import": false },
  tsconfig: path.join(root, "tsconfig.json"),
  // Our modules' import.meta.url (see the plugin) is relative to the bundle's own URL.
  banner: { js: 'var __switchboardBundleUrl = require("node:url").pathToFileURL(__filename).href;' },
  // Less to read and parse at each start; names stay, so stack traces still say where.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: "none",
  metafile: true,
  plugins: [plugin],
  logLevel: "warning",
});

// Whatever stays external must be in a production install (`npm ci --omit=dev`); a package
// that is not installed at all may only be an optional probe (a require() or import() whose failure the SDK catches).
const lock = JSON.parse(fs.readFileSync(path.join(root, "package-lock.json"), "utf8")).packages ?? {};
const missing = new Set();
for (const out of Object.values(result.metafile.outputs)) {
  for (const imp of out.imports ?? []) {
    if (!imp.external || imp.path.startsWith("node:") || !/^[@a-z]/.test(imp.path)) continue;
    const name = pkgName(imp.path);
    if (createRequire(import.meta.url)("node:module").builtinModules.includes(name)) continue;
    const entry = lock[`node_modules/${name}`];
    if (entry ? entry.dev === true : imp.kind !== "require-call" && imp.kind !== "dynamic-import") missing.add(name);
  }
}
if (missing.size) {
  console.error(`build: the build imports ${[...missing].join(", ")} at run time, which a production install does not have.`);
  process.exit(1);
}

// Files our modules read at run time, at their original paths under dist/ (see the plugin).
function assets(dir) {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) return rel === "src/store/generated" ? [] : assets(rel);
    return /\.(ts|md)$/.test(e.name) ? [] : [rel];
  });
}
for (const rel of [...assets("src"), ...assets("adapters")]) fs.cpSync(path.join(root, rel), path.join(dist, rel));
for (const rel of ["prisma/sqlite/migrations", "prisma/postgresql/migrations"]) fs.cpSync(path.join(root, rel), path.join(dist, rel), { recursive: true });
// bin/load-build.mjs reads the bundle as Latin-1, twice as fast as UTF-8 for 7 MB: exact only
// while it is ASCII. esbuild escapes every other character except in regular expression
// literals; write those as \uXXXX.
const bundleBytes = fs.readFileSync(path.join(dist, "app", "switchboard.cjs"));
const nonAscii = bundleBytes.findIndex((b) => b > 0x7f);
if (nonAscii >= 0) {
  const at = bundleBytes.subarray(Math.max(0, nonAscii - 60), nonAscii + 20).toString("utf8");
  console.error(`build: the bundle is not ASCII (a regular expression literal? write the character as \\uXXXX): …${at}…`);
  process.exit(1);
}

// The build's V8 code caches (bin/load-build.mjs), each made in a fresh process for the Node
// that runs the build: serve's with every module evaluated, nothing connected; the CLI's after
// running its read-only commands on a throwaway database. V8 refuses a cache made under other
// flags, so serve's is made under the flags `npm start` gives node (scripts/serve-process.mjs).
for (const kind of ["serve", "cli"]) {
  const flags = kind === "serve" ? SERVE_NODE_FLAGS : [];
  execFileSync(process.execPath, [...flags, path.join(root, "scripts", "warm-code-cache.mjs"), path.join(dist, "app", "switchboard.cjs"), kind], {
    stdio: "inherit",
  });
}
const files = fs.readdirSync(path.join(dist, "app")).length;
console.log(
  `build: ${Object.keys(result.metafile.inputs).length} modules into ${files} files in ${path.relative(root, dist) || dist}/app/ in ${Math.round(performance.now() - started)} ms.`,
);
