// The production build (`npm run build`; `npm install` runs it as `prepare`):
// src/ and adapters/, with the generated Prisma clients, transpiled to dist/ as
// plain JavaScript, plus the files the code reads at run time beside it. The
// running gateway then needs no TypeScript compiler (bin/switchboard.mjs loads
// dist/). Transpiling only: `npm run typecheck` (part of `npm test`) checks types.
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
    fs.existsSync(path.join(dist, "src", "cli.js"))
      ? "build: esbuild is not installed (production install): using the dist/ already here."
      : "build: esbuild is not installed (production install) and there is no dist/ yet: copy a build into dist/ (npm run build on a full install) before starting.",
  );
  process.exit(0);
}

function tsFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return tsFiles(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [p] : [];
  });
}

if (!fs.existsSync(path.join(root, "src", "store", "generated", "sqlite", "client.ts"))) {
  console.error("build: the Prisma clients are missing (src/store/generated): run `npm run db:generate` first.");
  process.exit(1);
}

const started = performance.now();
fs.rmSync(dist, { recursive: true, force: true });
const entryPoints = [...tsFiles(path.join(root, "src")), ...tsFiles(path.join(root, "adapters"))];
// Packages that ship as many small modules are loaded file by file at every start: zod
// (about 120 ES modules) and prom-client (with @opentelemetry/api, about 85 CommonJS files)
// were a third of the time to ready. Each goes into dist/vendor/ as one prebundled file, which
// the compiled modules import instead; every other import is left exactly as written.
// The Prisma runtime the generated clients import is vendored too, so a production install
// needs no @prisma/client: its peer dependencies (the prisma CLI and TypeScript) would
// otherwise come along with `npm ci --omit=dev`, since npm keeps a dev dependency that a
// production package names as an optional peer.
const vendor = (file) => path.join(dist, "vendor", file);
const VENDORED = {
  zod: { file: vendor("zod.js"), format: "esm" },
  "prom-client": { file: vendor("prom-client.js"), format: "cjs" },
  "@prisma/client/runtime/client": { file: vendor("prisma-client/runtime/client.js"), format: "cjs" },
  "@prisma/client/runtime/index-browser": { file: vendor("prisma-client/runtime/index-browser.js"), format: "esm" },
};
for (const provider of ["sqlite", "postgresql"]) {
  for (const part of ["", ".wasm-base64"]) {
    const name = `query_compiler_fast_bg.${provider}${part}.mjs`;
    VENDORED[`@prisma/client/runtime/${name}`] = { file: vendor(`prisma-client/runtime/${name.replace(/\.mjs$/, ".js")}`), format: "esm" };
  }
}
const requireHere = createRequire(path.join(root, "package.json"));
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
for (const [name, v] of Object.entries(VENDORED)) {
  // A CommonJS package is bundled into an ES module that names its exports (read here, at build
  // time): importing it then costs no run-time scan of the file for export names.
  const names = v.format === "cjs" ? Object.keys(requireHere(name)).filter((k) => IDENTIFIER.test(k) && k !== "default") : [];
  const contents = v.format === "esm" ? `export * from "${name}";` : `import * as m from "${name}";\nexport const { ${names.join(", ")} } = m;\n`;
  esbuild.buildSync({
    stdin: { contents, resolveDir: root },
    bundle: true,
    outfile: v.file,
    format: "esm",
    platform: "node",
    target: "node20",
    // Bundled CommonJS calls require() for Node's built-ins; an ES module has none of its own.
    banner: v.format === "cjs" ? { js: 'import { createRequire as __createRequire } from "node:module";\nconst require = __createRequire(import.meta.url);' } : undefined,
    logLevel: "warning",
  });
}

const keepImports = {
  name: "keep-imports",
  setup(build) {
    build.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === "entry-point") return undefined;
      const vendored = VENDORED[args.path];
      if (vendored) {
        const out = path.join(dist, path.relative(root, args.resolveDir));
        let rel = path.relative(out, vendored.file).split(path.sep).join("/");
        if (!rel.startsWith(".")) rel = `./${rel}`;
        return { path: rel, external: true };
      }
      return { path: args.path, external: true };
    });
  },
};
await esbuild.build({
  entryPoints,
  outdir: dist,
  outbase: root,
  bundle: true, // with every import external: one output file per module, imports rewritten only for VENDORED
  format: "esm",
  platform: "node",
  target: "node20",
  tsconfig: path.join(root, "tsconfig.json"),
  plugins: [keepImports],
  logLevel: "warning",
});

// Nothing may still import a package that is only a dev dependency now.
const leftovers = [];
for (const f of fs.readdirSync(dist, { recursive: true })) {
  if (!String(f).endsWith(".js") || String(f).startsWith("vendor")) continue;
  const m = /(?:from\s*|import\()\s*["'](@prisma\/client[^"']*)["']/.exec(fs.readFileSync(path.join(dist, String(f)), "utf8"));
  if (m) leftovers.push(`${f}: ${m[1]}`);
}
if (leftovers.length) {
  console.error(`build: these imports of @prisma/client are not vendored (add them to VENDORED in scripts/build.mjs):\n${leftovers.join("\n")}`);
  process.exit(1);
}

// Read at run time relative to the module that reads them (import.meta.url):
// the console page's assets, and the migrations (src/store/migrate.ts looks in ../../prisma).
const copies = [
  ["adapters/console/static", "adapters/console/static"],
  ["prisma/sqlite/migrations", "prisma/sqlite/migrations"],
  ["prisma/postgresql/migrations", "prisma/postgresql/migrations"],
];
for (const [from, to] of copies) fs.cpSync(path.join(root, from), path.join(dist, to), { recursive: true });
console.log(`build: ${entryPoints.length} modules into ${path.relative(root, dist) || dist}/ in ${Math.round(performance.now() - started)} ms.`);
