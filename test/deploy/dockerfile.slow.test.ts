import { execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../../tools/pg-cluster.js";
import { dockerIgnore, parseDockerfile, type Stage } from "./dockerfile.js";

/**
 * No container runtime runs here, so this runs the Dockerfile's own steps
 * (read from the file, not copied) on the host: each stage is a clean folder;
 * COPY copies from the build context (less .dockerignore) or an earlier stage;
 * RUN runs in the stage's WORKDIR with its ENV, exactly as written. The final
 * stage's RUN lines create and chown the VOLUME (checked, then done here for
 * the stand-in user); its CMD then runs as a non-root user (nobody, standing in
 * for USER) as PID 1 of a new PID namespace, as in a container, with the
 * volume's path mapped into the stage folder and the port picked free on
 * 127.0.0.1 (what `-p 127.0.0.1:PORT:8787` does). The HEALTHCHECK command must
 * pass, and SIGTERM must stop the gateway cleanly.
 *
 * The `npm ci --omit=dev` stage compiles better-sqlite3 when no prebuilt binary
 * can be downloaded (this machine is offline), which takes a few minutes.
 */
const ROOT = path.resolve(".");
const NON_ROOT = { uid: 65534, gid: 65534, name: "nobody" };
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-docker-"));
fs.chmodSync(scratch, 0o755);

afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

function contextFiles(): string[] {
  const ignored = dockerIgnore(path.join(ROOT, ".dockerignore"));
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const e of fs.readdirSync(path.join(ROOT, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (ignored(p)) continue;
      if (e.isDirectory()) walk(p);
      else out.push(p);
    }
  };
  walk("");
  return out;
}

interface Built {
  stage: Stage;
  root: string;
}

function inside(root: string, containerPath: string): string {
  return path.join(root, containerPath);
}

/** COPY src... dest (dest relative to WORKDIR), Docker's rules for files and directories. */
function copy(from: string, sources: string[], destRoot: string, workdir: string, dest: string, context: string[] | undefined) {
  const target = inside(destRoot, path.posix.resolve(workdir, dest));
  for (const src of sources) {
    const abs = path.join(from, src === "." ? "" : src);
    if (!fs.existsSync(abs)) throw new Error(`COPY source ${src} does not exist`);
    if (context && src === ".") {
      for (const f of context) {
        fs.mkdirSync(path.dirname(path.join(target, f)), { recursive: true });
        fs.copyFileSync(path.join(ROOT, f), path.join(target, f));
      }
    } else if (fs.statSync(abs).isDirectory()) {
      fs.cpSync(abs, target, { recursive: true, verbatimSymlinks: true }); // a directory's contents go into dest
    } else {
      const file = dest.endsWith("/") ? path.join(target, path.basename(src)) : target;
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.copyFileSync(abs, file);
    }
  }
}

function build(stages: Stage[]): Map<string, Built> {
  const built = new Map<string, Built>();
  const context = contextFiles();
  for (const stage of stages.slice(0, -1)) {
    const root = path.join(scratch, stage.name);
    const base = built.get(stage.image);
    if (base) fs.cpSync(base.root, root, { recursive: true, verbatimSymlinks: true });
    else fs.mkdirSync(root);
    const env = { ...(base?.stage.env ?? {}), ...stage.env };
    const workdir = stage.workdir !== "/" ? stage.workdir : (base?.stage.workdir ?? "/");
    fs.mkdirSync(inside(root, workdir), { recursive: true });
    for (const step of stage.steps) {
      if (step.kind === "copy") {
        const from = step.copy.from ? built.get(step.copy.from) : undefined;
        if (step.copy.from && !from) throw new Error(`COPY --from=${step.copy.from}: no such stage`);
        copy(
          from ? inside(from.root, "/") : ROOT,
          from ? step.copy.sources.map((s) => s.replace(/^\//, "")) : step.copy.sources,
          root,
          workdir,
          step.copy.dest,
          from ? undefined : context,
        );
      } else {
        const r = spawnSync("sh", ["-c", step.command], {
          cwd: inside(root, workdir),
          env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
          encoding: "utf8",
          timeout: 900_000,
        });
        if (r.status !== 0) throw new Error(`stage ${stage.name}: RUN ${step.command} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
        if (r.stderr.includes("EBADENGINE")) throw new Error(`stage ${stage.name}: RUN ${step.command} warned EBADENGINE:\n${r.stderr}`);
      }
    }
    built.set(stage.name, { stage: { ...stage, env, workdir }, root });
  }
  return built;
}

function du(dir: string): number {
  return Number(execFileSync("du", ["-sb", dir], { encoding: "utf8" }).split("\t")[0]);
}

describe("the Dockerfile, run step by step", () => {
  it("builds, installs production dependencies only, and runs the gateway as a non-root PID 1 that passes its HEALTHCHECK and stops on SIGTERM", async () => {
    const stages = parseDockerfile(path.join(ROOT, "Dockerfile"));
    const final = stages.at(-1)!;
    expect(stages.length).toBeGreaterThanOrEqual(2); // multi-stage
    expect(final.user && final.user !== "root" && final.user !== "0").toBe(true);
    expect(final.cmd?.[0]).toBe("node"); // the gateway itself is PID 1: no npm, no shell in between
    // The HEALTHCHECK is node running a script of the image that probes /healthz.
    const [hcNode, hcScript] = final.healthcheck?.cmd ?? [];
    expect(hcNode).toBe("node");
    expect(fs.readFileSync(path.join(ROOT, hcScript!), "utf8")).toContain("/healthz");
    const dbUrl = final.env.DATABASE_URL ?? "";
    const volume = final.volumes.find((v) => dbUrl.startsWith(`file:${v}/`));
    expect(volume, `a VOLUME holds the SQLite file of DATABASE_URL=${dbUrl}`).toBeDefined();

    const built = build(stages);

    // The final stage.
    const root = path.join(scratch, "runtime");
    fs.mkdirSync(inside(root, final.workdir), { recursive: true });
    for (const step of final.steps) {
      if (step.kind === "copy") {
        const from = step.copy.from ? built.get(step.copy.from)!.root : ROOT;
        copy(from, step.copy.sources, root, final.workdir, step.copy.dest, undefined);
      } else {
        // Only the volume's preparation belongs here; anything else would need running.
        expect(step.command).toMatch(new RegExp(`^mkdir -p ${volume} && chown ${final.user}:\\S+ ${volume}$`));
        fs.mkdirSync(inside(root, volume!), { recursive: true });
        fs.chownSync(inside(root, volume!), NON_ROOT.uid, NON_ROOT.gid);
      }
    }
    const app = inside(root, final.workdir);
    const modules = path.join(app, "node_modules");
    for (const buildTool of ["tsx", "typescript", "esbuild", "prisma", "vitest", "@prisma/streams-local"]) {
      expect(fs.existsSync(path.join(modules, buildTool)), `${buildTool} in the runtime's node_modules`).toBe(false);
    }
    const size = { node_modules: du(modules), dist: du(path.join(app, "dist")), total: du(app) };
    console.log(`runtime image contents: ${JSON.stringify(size)} bytes`);

    // The README's `docker run --env-file .env` with .env copied from .env.example and
    // OPERATOR_TOKEN set, as the Deploy section says: docker puts the file's lines over the
    // image's ENV, literally. The image's DATABASE_URL and HTTP_HOST=0.0.0.0 must survive it.
    const envFile = Object.fromEntries(
      fs
        .readFileSync(path.join(ROOT, ".env.example"), "utf8")
        .split("\n")
        .filter((l) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(l))
        .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
    );
    const containerEnv: Record<string, string> = { ...final.env, ...envFile, OPERATOR_TOKEN: "docker-operator-token-0123456789abcdef" };
    expect(containerEnv.DATABASE_URL).toBe(dbUrl);
    expect(containerEnv.HTTP_HOST).toBe("0.0.0.0");
    const port = await freePort();
    const env: Record<string, string> = {
      PATH: process.env.PATH!,
      HOME: fs.mkdtempSync(path.join(scratch, "home-")), // the node user's home: npm's cache goes there
      ...containerEnv,
      // The volume's path mapped into the stage folder, and a free port where -p would map 8787.
      DATABASE_URL: `file:${inside(root, dbUrl.slice("file:".length))}`,
      HTTP_PORT: String(port),
    };
    fs.chownSync(env.HOME!, NON_ROOT.uid, NON_ROOT.gid);
    const started = performance.now();
    // unshare --fork makes the next program PID 1 of a new PID namespace; setpriv drops to the
    // non-root user and execs node, so node itself is PID 1, as under `docker run`.
    const child = spawn(
      "unshare",
      ["--pid", "--fork", "--kill-child", "setpriv", `--reuid=${NON_ROOT.uid}`, `--regid=${NON_ROOT.gid}`, "--clear-groups", ...final.cmd!],
      {
        cwd: app,
        env,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    try {
      await expect.poll(() => output.includes("switchboard ready"), { timeout: 60_000, interval: 20 }).toBe(true);
      const readyMs = performance.now() - started;
      const gateway = fs.readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, "utf8").trim().split(/\s+/).map(Number)[0]!;
      const status = fs.readFileSync(`/proc/${gateway}/status`, "utf8");
      expect(status).toMatch(/^NSpid:\s+\d+\s+1$/m); // PID 1 in its namespace
      expect(status).toMatch(new RegExp(`^Uid:\\s+${NON_ROOT.uid}\\s`, "m"));
      expect(fs.readFileSync(`/proc/${gateway}/cmdline`, "utf8").split("\0")[0]).toBe("node");

      // Docker runs the HEALTHCHECK in the WORKDIR with the container's environment.
      const hc = final.healthcheck!.cmd;
      const check = spawnSync(hc[0]!, hc.slice(1), { cwd: app, env, encoding: "utf8", timeout: 30_000 });
      expect(check.status, check.stderr).toBe(0);
      expect(output).toContain(`0.0.0.0:${port}`);

      // `docker exec switchboard npx switchboard ...` (the README's Troubleshooting command):
      // the image's node_modules/.bin/switchboard, as the node user, with no install first
      // (which needed the scripts/ the image does not have: ENOENT).
      const npxEnv = { ...env, npm_config_offline: "true", npm_config_yes: "false", npm_config_update_notifier: "false" };
      for (const args of [["--help"], ["sessions", "list", "--json"]]) {
        const r = spawnSync("setpriv", [`--reuid=${NON_ROOT.uid}`, `--regid=${NON_ROOT.gid}`, "--clear-groups", "npx", "switchboard", ...args], {
          cwd: app,
          env: npxEnv,
          encoding: "utf8",
          timeout: 60_000,
        });
        expect(r.status, `npx switchboard ${args.join(" ")}: ${r.stderr}`).toBe(0);
        expect(r.stderr).not.toMatch(/ENOENT|npm (warn|error)/);
      }
      const npmDir = path.join(env.HOME!, ".npm");
      expect(fs.existsSync(npmDir) ? fs.readdirSync(npmDir) : []).not.toContain("_npx");
      expect(fs.existsSync(inside(root, dbUrl.slice("file:".length)))).toBe(true);
      const rssMb = Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
      console.log(`runtime: ready ${Math.round(readyMs)} ms after spawn, RSS ${Math.round(rssMb)} MB`);

      process.kill(gateway, "SIGTERM");
      expect(await exited).toBe(0);
      expect(output).toContain("switchboard stopped");
    } finally {
      child.kill("SIGKILL");
    }
  }, 1_200_000);
});
