/**
 * `switchboard serve` refusing to start where it cannot work, as an operator
 * meets it: a second serve on the same SQLite file (the first one named), a
 * lock left by a killed serve (taken over, never blocking), and a port in use
 * (HTTP_PORT named). Real processes, real SQLite files, real sockets.
 */
import { type ChildProcess, spawn } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { eventually } from "./support/app.js";
import { freshDatabaseUrl } from "./support/db.js";

const bin = path.resolve("bin/switchboard.mjs");

interface Serve {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

const running: Serve[] = [];

function serve(env: Record<string, string>): Serve {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(TELEGRAM|DISCORD|SLACK|OPENAI|OPERATOR|HTTP_|DATABASE_URL)/.test(k)));
  const child = spawn(process.execPath, [bin, "serve"], {
    env: { ...clean, LOG_FORMAT: "json", CONSOLE_ENABLED: "false", HTTP_HOST: "127.0.0.1", HTTP_PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const s = { child, output: () => output, exited: new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code))) };
  running.push(s);
  return s;
}

const ready = (s: Serve) => eventually(s.output, (o) => o.includes("switchboard ready"), 60_000, "the ready line");
const exitCode = (s: Serve) => s.exited;

afterEach(async () => {
  for (const s of running.splice(0)) {
    if (s.child.exitCode === null && s.child.signalCode === null) {
      s.child.kill("SIGKILL");
      await s.exited;
    }
  }
});

describe("switchboard serve refuses a start that cannot work", { timeout: 180_000 }, () => {
  it("a second serve on the same SQLite file refuses to start, naming the first one's pid; a killed serve's lock blocks nobody", async () => {
    const url = await freshDatabaseUrl("sqlite");
    const first = serve({ DATABASE_URL: url });
    await ready(first);

    const second = serve({ DATABASE_URL: url });
    expect(await exitCode(second)).toBe(1);
    expect(second.output()).toContain(`pid ${first.child.pid}`);
    expect(second.output()).toMatch(/another switchboard serve/);
    expect(second.output()).toMatch(/SHARED_DATABASE/);
    expect(second.output()).not.toContain("switchboard ready");
    expect(second.output()).not.toMatch(/\n\s+at /); // a message, not a stack trace
    // The first one is untouched.
    expect(first.child.exitCode).toBeNull();

    // kill -9 leaves the lock file behind; the lock itself went with the process.
    first.child.kill("SIGKILL");
    await first.exited;
    const third = serve({ DATABASE_URL: url });
    await ready(third);
    third.child.kill("SIGTERM");
    expect(await third.exited).toBe(0);

    // After a clean stop too.
    const fourth = serve({ DATABASE_URL: url });
    await ready(fourth);
  });

  it("a port in use is an error naming HTTP_PORT and what to do", async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const port = (holder.address() as net.AddressInfo).port;
    try {
      const s = serve({ DATABASE_URL: await freshDatabaseUrl("sqlite"), HTTP_PORT: String(port) });
      expect(await exitCode(s)).toBe(1);
      expect(s.output()).toContain(`HTTP_PORT ${port} is in use`);
      expect(s.output()).toMatch(/set HTTP_PORT to a free port/);
      expect(s.output()).not.toMatch(/\n\s+at /);
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });
});
