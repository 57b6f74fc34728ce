import { execFile, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { discordDriver, slackDriver, telegramDriver, type PlatformDriver } from "../bench/lib/platforms.js";
import { SERVE_ENV, SERVE_NODE_FLAGS } from "../scripts/serve-process.mjs";
import { freePort } from "../tools/pg-cluster.js";

/**
 * The compiled build as `npm start` runs it: scripts/build.mjs into a throwaway
 * install (bin/, dist/, package.json, node_modules linked), started with plain
 * node from a fresh working folder, never through tsx.
 */
const ROOT = path.resolve(".");
const run = promisify(execFile);
let install: string;
let bin: string;

beforeAll(async () => {
  install = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-build-"));
  // node_modules first: the build evaluates the bundle to write its code cache, and the bundle
  // requires what stays outside it (better-sqlite3) from beside itself.
  fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(install, "node_modules"));
  await run(process.execPath, [path.join(ROOT, "scripts/build.mjs"), `--out-dir=${path.join(install, "dist")}`]);
  // bin/ as a whole, as the Dockerfile copies it: switchboard.mjs imports its neighbours.
  fs.cpSync(path.join(ROOT, "bin"), path.join(install, "bin"), { recursive: true });
  fs.copyFileSync(path.join(ROOT, "package.json"), path.join(install, "package.json"));
  bin = path.join(install, "bin/switchboard.mjs");
}, 120_000);

afterAll(() => {
  if (install) fs.rmSync(install, { recursive: true, force: true });
});

/** The environment of a freshly logged-in operator: no Switchboard variables, no tsx switch. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, ...extra };
}

function freshFolder(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-cwd-"));
}

/** .env.example with some values changed, as an operator would write .env from it. */
function writeDotEnv(dir: string, changes: Record<string, string>): void {
  let text = fs.readFileSync(path.join(ROOT, ".env.example"), "utf8");
  for (const [k, v] of Object.entries(changes)) {
    const line = new RegExp(`^#?\\s*${k}=.*$`, "m");
    text = line.test(text) ? text.replace(line, `${k}=${v}`) : `${text}\n${k}=${v}\n`;
  }
  fs.writeFileSync(path.join(dir, ".env"), text);
}

interface Running {
  child: ChildProcess;
  url: string;
  stderr: () => string;
  /** The ready line. */
  ready: Record<string, unknown>;
  /** Everything it logged so far, stdout then stderr. */
  output: () => string;
}

const children = new Set<ChildProcess>();
afterEach(() => {
  // A test that failed half-way leaves no gateway running behind it.
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  children.clear();
});

/** `switchboard serve` in `cwd`; resolves once its ready line names the URL it listens on. */
function serve(cwd: string, env: NodeJS.ProcessEnv, nodeArgs: string[] = []): Promise<Running> {
  const child = spawn(process.execPath, [...nodeArgs, bin, "serve"], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  let out = "";
  let err = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line in 60 s; output: ${out}${err}`)), 60_000);
    // The log goes to stderr or stdout depending on the logger's setup: look at both, whole lines only.
    const look = () => {
      const line = `${out}${err}`.split("\n").find((l) => l.includes("switchboard ready") && l.trimEnd().endsWith("}"));
      if (line) {
        clearTimeout(timer);
        const ready = JSON.parse(line) as { url: string };
        resolve({ child, url: ready.url, stderr: () => err, ready, output: () => `${out}${err}` });
      }
    };
    child.stdout!.on("data", (d) => {
      out += d;
      look();
    });
    child.stderr!.on("data", (d) => {
      err += d;
      look();
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`switchboard serve exited with ${code} before ready; stderr: ${err}`));
    });
  });
}

async function stop(r: Running): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => r.child.once("exit", (code) => resolve(code)));
  r.child.kill("SIGTERM");
  return exited;
}

async function cli(cwd: string, env: NodeJS.ProcessEnv, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [bin, ...args], { cwd, env });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, stdout: x.stdout, stderr: x.stderr };
  }
}

describe(".env in the working directory", () => {
  it("configures `switchboard serve` and the CLI; a real environment variable wins over the file", async () => {
    const dir = freshFolder();
    const port = await freePort();
    writeDotEnv(dir, { HTTP_PORT: String(port), DATABASE_URL: "file:./state/from-dotenv.db", DM_POLICY: "open", LOG_LEVEL: "info" });

    // The CLI: migrate creates the database .env names, not the default ./data/switchboard.db.
    const migrated = await cli(dir, cleanEnv(), "migrate", "--json");
    expect(migrated.code, migrated.stderr).toBe(0);
    expect((JSON.parse(migrated.stdout) as { applied: string[] }).applied.length).toBeGreaterThan(0);
    expect(fs.existsSync(path.join(dir, "state/from-dotenv.db"))).toBe(true);
    expect(fs.existsSync(path.join(dir, "data"))).toBe(false);

    const fromFile = await serve(dir, cleanEnv());
    expect(new URL(fromFile.url).port).toBe(String(port));
    const health = await fetch(`${fromFile.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await stop(fromFile)).toBe(0);

    const other = await freePort();
    const fromEnv = await serve(dir, cleanEnv({ HTTP_PORT: String(other) }));
    expect(new URL(fromEnv.url).port).toBe(String(other));
    expect((await fetch(`${fromEnv.url}/healthz`)).status).toBe(200);
    expect(await stop(fromEnv)).toBe(0);
    // Still the .env database: the CLI finds nothing left to apply there.
    const again = await cli(dir, cleanEnv(), "migrate", "--json");
    expect(JSON.parse(again.stdout)).toMatchObject({ applied: [] });
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("a bad value in .env stops the start with one line naming the variable", async () => {
    const dir = freshFolder();
    writeDotEnv(dir, { HTTP_PORT: String(await freePort()), DM_POLICY: "bogus" });
    const r = await cli(dir, cleanEnv(), "serve");
    expect(r.code).toBe(1);
    const lines = r.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^DM_POLICY /);
    expect(fs.existsSync(path.join(dir, "data"))).toBe(false);
    // The environment still wins: the same file with a good DM_POLICY from outside starts.
    const ok = await serve(dir, cleanEnv({ DM_POLICY: "allowlist" }));
    expect(await stop(ok)).toBe(0);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe("the compiled gateway", () => {
  const drivers: PlatformDriver[] = [telegramDriver(1), discordDriver(1), slackDriver(1)];
  beforeAll(async () => {
    for (const d of drivers) await d.start();
  });
  afterAll(async () => {
    for (const d of drivers) await d.close();
  });

  it("loads no TypeScript compiler and no .ts file, with every adapter running", async () => {
    const dir = freshFolder();
    const audit = path.join(dir, "modules.txt");
    const env = cleanEnv({ HTTP_PORT: String(await freePort()), DM_POLICY: "open", LOG_LEVEL: "info", MODULE_AUDIT_FILE: audit });
    for (const d of drivers) Object.assign(env, d.env());
    const r = await serve(dir, env, ["--import", path.join(ROOT, "test/support/module-audit.mjs")]);
    const health = (await (await fetch(`${r.url}/healthz`)).json()) as { ready?: boolean };
    expect(health).toBeTypeOf("object");
    expect(await stop(r)).toBe(0);

    const loaded = [
      ...new Set(
        fs
          .readFileSync(audit, "utf8")
          .trim()
          .split("\n")
          .map((l) => l.split(" ")[1]!),
      ),
    ];
    // The audit saw the gateway itself and the platform SDKs: it is not looking at nothing.
    // The SDKs are inlined in the one bundle (scripts/build.mjs); only native addons stay in node_modules.
    for (const expected of ["/bin/load-build.mjs", "/dist/app/switchboard.cjs", "/node_modules/better-sqlite3/"]) {
      expect(
        loaded.some((u) => u.includes(expected)),
        expected,
      ).toBe(true);
    }
    // Nothing is read from the SDKs' own folders at run time: they come bundled.
    expect(loaded.filter((u) => /\/node_modules\/(grammy|discord\.js|@slack\/bolt|@discordjs|zod|pino|hono)\//.test(u))).toEqual([]);
    const compilers = loaded.filter((u) => /\/node_modules\/(tsx|typescript|esbuild|@esbuild|get-tsconfig)\//.test(u) || /\.[cm]?ts$/.test(u));
    expect(compilers).toEqual([]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("leaves the tokenizer out of the bundle (a quarter of it, read at every start), and it loads from the install when a count needs it", async () => {
    const bundle = path.join(install, "dist/app/switchboard.cjs");
    expect(fs.readFileSync(bundle, "latin1")).not.toContain("GptEncoding");
    // Where src/agent/token-counter.ts's worker resolves it from in the bundle: the module's own place under dist/.
    const from = new URL("../src/agent/token-counter.ts", pathToFileURL(bundle)).href;
    const { countTokens } = createRequire(from)("gpt-tokenizer/encoding/o200k_base") as { countTokens(t: string): number };
    expect(countTokens("hello world")).toBe(2);
    expect(fs.readFileSync(bundle, "utf8")).toContain(
      'new URL("../src/agent/token-counter.ts",__switchboardBundleUrl).href).resolve("gpt-tokenizer/encoding/o200k_base")',
    );
  });

  it("evaluates no browser copy of util.inspect: discord.js's event emitter is given Node's own", () => {
    const text = fs.readFileSync(path.join(install, "dist/app/switchboard.cjs"), "latin1");
    expect(text).toMatch(/import_inspect\d*=\{default:require\("node:util"\)\}/);
    expect(text).not.toMatch(/import_inspect\d*=__toESM\(require_inspect\d*\(\)/);
  });

  it("starts from V8's code cache and says so on its ready line: the build's, then its own; a rejected or missing one is reported and replaced", async () => {
    const app = path.join(install, "dist/app");
    const caches = (kind: string) => fs.readdirSync(app).filter((f) => f.startsWith(`switchboard.${kind}`) && f.endsWith(".v8cache"));
    const dir = freshFolder();
    const env = cleanEnv({ DM_POLICY: "open", LOG_LEVEL: "info" });
    for (const d of drivers) Object.assign(env, d.env());
    const start = async () => {
      // As `npm start` runs it: the build made serve's cache under its flags.
      const r = await serve(dir, { ...env, ...SERVE_ENV, HTTP_PORT: String(await freePort()) }, [...SERVE_NODE_FLAGS]);
      expect((await fetch(`${r.url}/healthz`)).status).toBe(200);
      expect(await stop(r)).toBe(0);
      return { cache: [r.ready.codeCache, r.ready.codeCacheFrom], wrote: r.output().includes("code cache written for the next start") };
    };
    // The build wrote its cache (scripts/build.mjs); a serve's from another test goes first.
    expect(caches("build")).toHaveLength(1);
    for (const f of caches("serve")) fs.rmSync(path.join(app, f));

    expect(await start()).toEqual({ cache: ["used", "build"], wrote: true });
    const [own] = caches("serve");
    expect(own).toMatch(/^switchboard\.serve-console\+discord\+slack\+telegram\./);
    expect(await start()).toEqual({ cache: ["used", "serve"], wrote: false });

    // A cache V8 refuses (as after a Node upgrade that kept the file name) is reported, then rewritten.
    const file = path.join(app, own!);
    const bytes = fs.readFileSync(file);
    bytes.fill(0x5a, 0, 64);
    fs.writeFileSync(file, bytes);
    expect(await start()).toEqual({ cache: ["rejected", "serve"], wrote: true });
    expect(await start()).toEqual({ cache: ["used", "serve"], wrote: false });

    // No cache at all: a start compiled from source, reported as such, that writes one.
    for (const f of [...caches("serve"), ...caches("build")]) fs.renameSync(path.join(app, f), path.join(dir, f));
    expect(await start()).toEqual({ cache: ["missing", null], wrote: true });
    expect(caches("serve")).toHaveLength(1);
    for (const f of caches("serve")) fs.rmSync(path.join(app, f));
    for (const f of fs.readdirSync(dir).filter((n) => n.endsWith(".v8cache"))) fs.renameSync(path.join(dir, f), path.join(app, f));
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
