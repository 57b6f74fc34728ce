/**
 * `switchboard serve` (a real process) on a non-loopback HTTP_HOST without
 * OPERATOR_TOKEN exits non-zero with one line naming the variable and the fix.
 * The configuration rule itself is checked in-process in http-edge.test.ts.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";

describe("exposure: OPERATOR_TOKEN, from the command", () => {
  it("serve on 0.0.0.0 without a token exits non-zero with one line naming OPERATOR_TOKEN and how to make one", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-exposure-"));
    const r = spawnSync(process.execPath, ["bin/switchboard.mjs", "serve"], {
      env: { ...process.env, HTTP_HOST: "0.0.0.0", HTTP_PORT: "0", OPERATOR_TOKEN: "", DATABASE_URL: `file:${path.join(dir, "x.db")}` },
      encoding: "utf8",
      timeout: 60_000,
    });
    fs.rmSync(dir, { recursive: true, force: true });
    console.log(`exposure: serve on 0.0.0.0 without a token exited ${r.status}: ${r.stderr.trim()}`);
    expect(r.status).not.toBe(0);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/^OPERATOR_TOKEN .*openssl rand -hex 32/);
  }, 60_000);
});
