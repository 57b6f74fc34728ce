// Loads the compiled build (dist/app/switchboard.cjs, the one CommonJS bundle scripts/build.mjs
// makes) through vm.Script with a V8 code cache beside it, so a start deserializes compiled
// code instead of parsing and compiling megabytes of JavaScript again ("The build" in
// docs/DESIGN.md). Two caches, for this V8 and CPU only (another Node binary gets its own
// files, never one V8 rejects): the build's two, made by `npm run build` (one after evaluating
// every module a start evaluates, one after running the read-only CLI commands), and a
// serve's, which `serve` writes once ready when it did not start from one for its adapters, so
// it also holds what compiled lazily while it connected. A missing or rejected cache costs
// time, never a start: the bundle compiles from source as Node would, and `serve` says so on
// its ready line. CLI commands read the CLI's cache and write none.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import vm from "node:vm";

const CACHE = /^switchboard\.(build|cli|serve)(?:-([a-z+]+))?\.(.+)\.v8cache$/;

/**
 * The cache file of `kind` for this V8 and CPU: "build" and "cli" (written by the build), or
 * "serve" with `key`, the adapters of the serve that wrote it.
 */
export function codeCachePath(bundle, kind, key) {
  return path.join(path.dirname(bundle), `switchboard.${kind}${key ? `-${key}` : ""}.${process.versions.v8}-${process.arch}.v8cache`);
}

/** The cache to read: for serve, a serve's if there is one, else the build's; for a CLI command, the CLI's. */
function pickCache(bundle, command) {
  const mine = `${process.versions.v8}-${process.arch}`;
  const found = fs
    .readdirSync(path.dirname(bundle))
    .map((name) => CACHE.exec(name))
    .filter((m) => m && m[3] === mine)
    .map((m) => ({ kind: m[1], key: m[2], file: path.join(path.dirname(bundle), m[0]) }));
  const order = command === "serve" ? ["serve", "build"] : ["cli", "serve", "build"];
  for (const kind of order) {
    const c = found.find((f) => f.kind === kind);
    if (c) return c;
  }
  return undefined;
}

/**
 * Runs the bundle for `command` ("serve", or anything else for a CLI command; readCache false
 * compiles it from source, as the build does to write a cache of its own) and returns its
 * exports with `codeCache`: `status` "used", "rejected" (V8
 * refused it: another V8 build or other V8 flags) or "missing"; `from` and `key`, the cache
 * read; and `save(kind, key)`, which writes that cache from what this process compiled so far
 * (functions compiled lazily included) and removes the serve cache it replaces.
 */
export function loadBuild(bundle, command, { readCache = true } = {}) {
  // ASCII (scripts/build.mjs checks), so Latin-1 reads it exactly, without UTF-8's decoding.
  const source = fs.readFileSync(bundle, "latin1");
  const picked = readCache ? pickCache(bundle, command) : undefined;
  const cachedData = picked ? fs.readFileSync(picked.file) : undefined;
  // Node's own CommonJS wrapper, on the bundle's first line so stack traces keep its positions.
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, { filename: bundle, cachedData });
  const status = cachedData === undefined ? "missing" : script.cachedDataRejected ? "rejected" : "used";
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(bundle), module, bundle, path.dirname(bundle));
  return {
    exports: module.exports,
    codeCache: {
      status,
      from: picked?.kind,
      key: picked?.key,
      save(kind, key) {
        const file = codeCachePath(bundle, kind, key);
        // Written aside and renamed: a gateway starting beside this one reads a whole file or none.
        const tmp = `${file}.${process.pid}.tmp`;
        try {
          fs.writeFileSync(tmp, script.createCachedData());
          fs.renameSync(tmp, file);
        } catch (e) {
          fs.rmSync(tmp, { force: true });
          throw e;
        }
        if (picked?.kind === "serve" && picked.file !== file) fs.rmSync(picked.file, { force: true });
        return file;
      },
    },
  };
}
