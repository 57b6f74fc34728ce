import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { SERVE_ENV, SERVE_NODE_FLAGS } from "../../scripts/serve-process.mjs";
import { parseDockerfile } from "./dockerfile.js";

/** The ways an operator starts the gateway, each written out by hand: they must all be scripts/serve-process.mjs's. */
describe("the gateway's process settings (scripts/serve-process.mjs)", () => {
  const envWords = Object.entries(SERVE_ENV).map(([k, v]) => `${k}=${v}`);

  it("`npm start` runs node with them", () => {
    const pkg = JSON.parse(fs.readFileSync("package.json", "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toBe(["exec env", ...envWords, "node", ...SERVE_NODE_FLAGS, "bin/switchboard.mjs serve"].join(" "));
  });

  it("the Docker image's CMD and ENV have them", () => {
    const runtime = parseDockerfile("Dockerfile").at(-1)!;
    expect(runtime.cmd).toEqual(["node", ...SERVE_NODE_FLAGS, "bin/switchboard.mjs", "serve"]);
    expect(runtime.env).toMatchObject(SERVE_ENV);
  });

  it("the systemd unit has them", () => {
    const lines = fs.readFileSync("deploy/switchboard.service", "utf8").split("\n");
    expect(lines.filter((l) => l.startsWith("ExecStart="))).toEqual([
      `ExecStart=/usr/bin/node ${SERVE_NODE_FLAGS.join(" ")} /opt/switchboard/bin/switchboard.mjs serve`,
    ]);
    expect(lines).toContain(`Environment=${envWords.join(" ")}`);
  });

  it("this Node takes the flags, and they bound the young generation however much is allocated", () => {
    // A flag Node does not know stops it with "bad option": the gateway would never start.
    const probe = `
      const v8 = require("node:v8");
      let keep = [];
      for (let i = 0; i < 2e6; i++) { keep.push({ i, s: "x" + i }); if (keep.length > 50000) keep = []; }
      const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space");
      process.stdout.write(String(young.space_size));`;
    const young = Number(execFileSync(process.execPath, [...SERVE_NODE_FLAGS, "-e", probe], { env: { ...process.env, ...SERVE_ENV }, encoding: "utf8" }));
    const semi = Number(/^--max-semi-space-size=(\d+)$/.exec(SERVE_NODE_FLAGS.find((f) => f.startsWith("--max-semi-space-size="))!)![1]);
    // Two semi-spaces at most; without the flag the same allocation grows it to 32 MB.
    expect(young).toBeGreaterThan(0);
    expect(young).toBeLessThanOrEqual(2 * semi * 2 ** 20);
  });

  it("a full collection gives the old generation's pages back when only a few survivors hold them", () => {
    // After a burst of chats most of what reached the old generation dies, and the survivors are
    // spread over many pages. V8's default compacts only a few of those pages, so the rest stay
    // resident (56 MB held for 9 in use in this probe); --compact-on-every-full-gc moves the survivors
    // together and frees the emptied pages. --expose-gc only lets the probe ask for the collections.
    const probe = `
      const v8 = require("node:v8");
      let keep = [];
      for (let i = 0; i < 400000; i++) keep.push({ i, s: "chat:" + i, t: [i] });
      gc(); gc();
      keep = keep.filter((_, i) => i % 8 === 0);
      gc();
      const old = v8.getHeapSpaceStatistics().find((s) => s.space_name === "old_space");
      process.stdout.write(JSON.stringify({ physical: old.physical_space_size, used: old.space_used_size, kept: keep.length }));`;
    // From a file: code run by -e (or stdin) kept the dropped objects alive here.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "serve-gc-"));
    const file = path.join(dir, "probe.cjs");
    fs.writeFileSync(file, probe);
    let out: string;
    try {
      out = execFileSync(process.execPath, [...SERVE_NODE_FLAGS, "--expose-gc", file], { env: { ...process.env, ...SERVE_ENV }, encoding: "utf8" });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    const old = JSON.parse(out) as { physical: number; used: number; kept: number };
    expect(old.kept).toBe(50_000);
    // Without the flag: about 6x what is in use. With it, within a few MB of it.
    expect(old.physical).toBeLessThan(old.used * 1.5 + 2 * 2 ** 20);
  });
});
