// The production build (`npm run build`; `npm install` runs it as `prepare`): src/ and
// adapters/, with the generated Prisma clients and every dependency esbuild can inline,
// bundled into a few ES modules in dist/app/, plus the files the code reads at run time
// beside them. The running gateway then needs no TypeScript compiler (bin/switchboard.mjs
// loads dist/app/). Transpiling only: `npm run typecheck` (part of `npm test`) checks types.
//
// Why bundled: Node resolves and reads a package's CommonJS file by file (discord.js, Bolt
// and grammY are about 1,500 files), which was most of the time to ready; one module per
// entry costs one read. Entries: cli.js (every command; each one's code is split out and
// loaded only when it runs), config.js, adapters.js, and one per adapter (telegram.js,
// discord.js, slack.js, console.js), imported only when its token is set: a CLI call never
// loads a platform SDK or the HTTP server, and an adapter that is not configured is never read.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// --out-dir=DIR builds elsewhere (test/build.slow.test.ts builds into a throwaway folder).
const outArg = process.argv.find((a) => a.startsWith("--out-dir="));
const dist = outArg ? path.resolve(outArg.slice("--out-dir=".length)) : path.join(root, "dist");

let esbuild;
try {
  esbuild = createRequire(import.meta.url)("esbuild");
} catch {
  // `npm ci --omit=dev` (a production install) runs this too, without the build tools: the
  // build must come from elsewhere (the Dockerfile copies it from its build stage).
  console.log(
    fs.existsSync(path.join(dist, "app", "cli.js"))
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
// esbuild leaves alone: each costs a start only when it is used.
const EXTERNAL = new Set([
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

const plugin = {
  name: "switchboard",
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => (EXTERNAL.has(pkgName(args.path)) ? { path: args.path, external: true } : undefined));
    // Our modules find their files (migrations, the console's assets, the login page) and
    // resolve packages relative to import.meta.url. Bundled, that is the chunk's URL in
    // dist/app/; each module gets its own original place instead (dist/<its path>), where
    // the files are copied below.
    build.onLoad({ filter: /\.ts$/ }, (args) => {
      if (!OWN.some((d) => args.path.startsWith(d))) return undefined;
      let text = fs.readFileSync(args.path, "utf8");
      if (text.includes("import.meta.url")) {
        const rel = `../${path.relative(root, args.path).split(path.sep).join("/")}`;
        text = text.replaceAll("import.meta.url", `new URL(${JSON.stringify(rel)}, import.meta.url).href`);
      }
      return { contents: text, loader: "ts" };
    });
  },
};

const started = performance.now();
fs.rmSync(dist, { recursive: true, force: true });
const result = await esbuild.build({
  absWorkingDir: root,
  entryPoints: {
    cli: "src/cli.ts",
    config: "src/config.ts",
    adapters: "adapters/index.ts",
    telegram: "adapters/telegram/index.ts",
    discord: "adapters/discord/index.ts",
    slack: "adapters/slack/index.ts",
    console: "adapters/console/index.ts",
  },
  outdir: path.join(dist, "app"),
  chunkNames: "chunk-[hash]",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  tsconfig: path.join(root, "tsconfig.json"),
  // Inlined CommonJS calls require() for Node's built-ins; an ES module has none of its own.
  banner: { js: 'import { createRequire as __switchboardCreateRequire } from "node:module";\nconst require = __switchboardCreateRequire(import.meta.url);' },
  legalComments: "none",
  metafile: true,
  plugins: [plugin],
  logLevel: "error",
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
const files = Object.keys(result.metafile.outputs).length;
console.log(
  `build: ${Object.keys(result.metafile.inputs).length} modules into ${files} files in ${path.relative(root, dist) || dist}/app/ in ${Math.round(performance.now() - started)} ms.`,
);
