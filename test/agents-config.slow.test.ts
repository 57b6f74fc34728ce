/**
 * `switchboard serve` with an invalid AGENTS_CONFIG (issue 29, acceptance 6):
 * the start stops with exactly one line naming the agent (or route) and the
 * field, exit 1, for an unknown field, a route to a missing agent and a
 * missing key variable; a valid file starts, and no agent's key appears in
 * anything the process prints. Real processes, real files.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { eventually } from "./support/app.js";
import { freshDatabaseUrl } from "./support/db.js";

const bin = path.resolve("bin/switchboard.mjs");
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agents-config-"));
const SECRET = "sk-support-0123456789-never-printed";

interface Serve {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}
const running: Serve[] = [];

function serve(file: unknown, env: Record<string, string> = {}): Serve {
  const at = path.join(dir, `agents-${running.length}.json`);
  fs.writeFileSync(at, JSON.stringify(file));
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(TELEGRAM|DISCORD|SLACK|OPENAI|OPERATOR|HTTP_|DATABASE_URL|AGENTS_CONFIG)/.test(k)),
  );
  const child = spawn(process.execPath, [bin, "serve"], {
    env: { ...clean, LOG_FORMAT: "json", CONSOLE_ENABLED: "false", HTTP_HOST: "127.0.0.1", HTTP_PORT: "0", AGENTS_CONFIG: at, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const s = { child, output: () => output, exited: new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code))) };
  running.push(s);
  return s;
}

afterEach(async () => {
  for (const s of running.splice(0)) {
    if (s.child.exitCode === null && s.child.signalCode === null) {
      s.child.kill("SIGKILL");
      await s.exited;
    }
  }
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const support = { baseUrl: "http://127.0.0.1:9/v1", apiKeyEnv: "SUPPORT_KEY", model: "small-1" };

describe("an invalid AGENTS_CONFIG stops switchboard serve with one line", { timeout: 180_000 }, () => {
  const cases: Array<[string, unknown, Record<string, string>, RegExp]> = [
    [
      "an unknown field",
      { agents: { support: { ...support, colour: "red" } } },
      { SUPPORT_KEY: SECRET },
      /^AGENTS_CONFIG \(.*\): agent "support" has an unknown field "colour": remove it or check its spelling\.$/,
    ],
    [
      "a route to a missing agent",
      { agents: { support }, routes: [{ match: { chat: "dm:ann" }, agent: "coder" }] },
      { SUPPORT_KEY: SECRET },
      /^AGENTS_CONFIG \(.*\): route 1, field agent: no agent is named "coder" \(the agents are default, support\)\.$/,
    ],
    [
      "a missing key variable",
      { agents: { support } },
      {},
      /^AGENTS_CONFIG \(.*\): agent "support", field apiKeyEnv: the variable SUPPORT_KEY is not set; set it in the environment or \.env\.$/,
    ],
  ];
  for (const [what, file, env, line] of cases) {
    it(what, async () => {
      const s = serve(file, { DATABASE_URL: await freshDatabaseUrl("sqlite"), ...env });
      expect(await s.exited).toBe(1);
      const lines = s.output().trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(line);
      expect(s.output()).not.toContain(SECRET);
    });
  }

  it("a valid file starts (its agents in the ready line), and the key is never printed", async () => {
    const s = serve(
      { agents: { support }, routes: [{ match: { platform: "console" }, agent: "support" }] },
      {
        DATABASE_URL: await freshDatabaseUrl("sqlite"),
        SUPPORT_KEY: SECRET,
        LOG_LEVEL: "debug",
      },
    );
    const out = await eventually(s.output, (o) => o.includes("switchboard ready"), 60_000, "the ready line");
    expect(out).toContain('"agents":["default","support"]');
    s.child.kill("SIGTERM");
    expect(await s.exited).toBe(0);
    expect(s.output()).not.toContain(SECRET);
  });
});
