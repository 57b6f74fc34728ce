/**
 * The Dockerfile's HEALTHCHECK command (read from the file) probes the address
 * the gateway serves, wherever HTTP_HOST and HTTP_PORT put it: given in the
 * environment (docker's --env-file) or in .env in the working directory (as the
 * gateway reads them), and fails, naming the address, when nothing answers.
 * The gateway is the real `switchboard serve`; dockerfile.slow.test.ts runs the
 * same command against the image's layout.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../tools/pg-cluster.js";
import { eventually } from "../support/app.js";
import { freshDatabaseUrl } from "../support/db.js";
import { parseDockerfile } from "./dockerfile.js";

const ROOT = path.resolve(".");
const healthcheck = parseDockerfile(path.join(ROOT, "Dockerfile")).at(-1)!.healthcheck!.cmd;
const bare = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(HTTP_|OPERATOR_|DATABASE_URL)/.test(k)));

/** Runs the HEALTHCHECK as Docker does: in the image's WORKDIR (here a folder whose bin/ is the project's), with the container's environment. */
function probe(env: Record<string, string>, workdir: string): { status: number | null; stderr: string } {
  const r = spawnSync(healthcheck[0]!, healthcheck.slice(1), { cwd: workdir, env: { ...bare, ...env }, encoding: "utf8", timeout: 30_000 });
  return { status: r.status, stderr: r.stderr };
}

describe("the Dockerfile's HEALTHCHECK", { timeout: 120_000 }, () => {
  // 127.0.0.2 is loopback too (the whole 127/8 is), but not the 127.0.0.1 a fixed probe would use.
  const host = "127.0.0.2";
  let port: number;
  let gateway: ChildProcess;
  const workdir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-hc-"));
  fs.symlinkSync(path.join(ROOT, "bin"), path.join(workdir, "bin"));

  beforeAll(async () => {
    port = await freePort();
    gateway = spawn(process.execPath, [path.join(ROOT, "bin/switchboard.mjs"), "serve"], {
      env: { ...bare, LOG_FORMAT: "json", DATABASE_URL: await freshDatabaseUrl("sqlite"), HTTP_HOST: host, HTTP_PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    gateway.stdout!.on("data", (d) => (output += d));
    gateway.stderr!.on("data", (d) => (output += d));
    await eventually(
      () => output,
      (o) => o.includes("switchboard ready"),
      60_000,
      "the gateway's ready line",
    );
  });
  afterAll(async () => {
    if (gateway && gateway.exitCode === null) {
      const exited = new Promise((resolve) => gateway.once("exit", resolve));
      gateway.kill("SIGTERM");
      await exited;
    }
    fs.rmSync(workdir, { recursive: true, force: true });
  });

  it("passes against a gateway on a non-default host and port given in the environment", () => {
    expect(probe({ HTTP_HOST: host, HTTP_PORT: String(port) }, workdir)).toEqual({ status: 0, stderr: "" });
  });

  it("reads HTTP_HOST and HTTP_PORT from .env in the working directory as the gateway does", () => {
    fs.writeFileSync(path.join(workdir, ".env"), `# as an operator writes it\nHTTP_HOST=${host}\nHTTP_PORT=${port}\n`);
    try {
      expect(probe({}, workdir)).toEqual({ status: 0, stderr: "" });
    } finally {
      fs.rmSync(path.join(workdir, ".env"));
    }
  });

  it("fails, naming the address it probed, when nothing answers there", async () => {
    const elsewhere = await freePort();
    const r = probe({ HTTP_HOST: "0.0.0.0", HTTP_PORT: String(elsewhere) }, workdir);
    expect(r.status).toBe(1);
    // A wildcard bind is probed on loopback.
    expect(r.stderr).toContain(`http://127.0.0.1:${elsewhere}/healthz`);
  });
});
