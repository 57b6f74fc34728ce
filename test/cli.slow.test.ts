import { execFile, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { Pairing } from "../src/gateway/inbound/pairing.js";
import { Registry } from "../src/session/index.js";
import { AccessStore, IdentityStore, openDatabase, SessionStore, TranscriptStore } from "../src/store/index.js";
import { freshDatabaseUrl } from "./support/db.js";

const run = promisify(execFile);
const bin = path.resolve("bin/switchboard.mjs");

async function cli(url: string | undefined, args: string[], opts: { cwd?: string } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: "silent" };
  if (url === undefined) delete env.DATABASE_URL;
  else env.DATABASE_URL = url;
  try {
    const r = await run(process.execPath, [bin, ...args], { env, cwd: opts.cwd });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

/** --json output: exactly one JSON document on stdout: the result as documented, or {ok:false,error}. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function parsed(r: { stdout: string }): any {
  const doc = JSON.parse(r.stdout);
  if (doc.ok === false) expect(Object.keys(doc).sort()).toEqual(["error", "ok"]);
  return doc;
}

// Each test runs the real CLI several times in a row; on a loaded 2-core machine one call can take seconds.
describe("switchboard CLI", { timeout: 180_000 }, () => {
  let url: string;
  let sessionId: string;
  let groupSessionId: string;
  let pairingCode: string;
  beforeAll(async () => {
    url = await freshDatabaseUrl("sqlite");
    const db = await openDatabase({ url });
    const registry = new Registry(new SessionStore(db));
    const ids = new IdentityStore(db);
    const alice = await ids.userId("telegram", "5012345678", "Alice");
    const group = await ids.groupId("telegram", "-100777");
    const s = await registry.resolveChatChannel({ agentId: "bot", userId: alice, channel: "telegram:bot:dm:5012345678" });
    await new TranscriptStore(db).append(
      s.id,
      [
        { role: "user", content: "hello there" },
        { role: "assistant", content: "echo: hello there" },
      ],
      { turnIncrement: 1 },
    );
    sessionId = s.id;
    groupSessionId = (await registry.resolveChatChannel({ agentId: "bot", userId: group, groupId: group, channel: "telegram:bot:group:-100777" })).id;
    const p = await new Pairing(new AccessStore(db)).request({ platform: "telegram", botId: "bot", senderId: "999", displayName: "Mallory" });
    pairingCode = p.kind === "code" ? p.code : "";
    await db.close();
  });

  it("migrate reports that nothing is pending on a migrated database, and applies on a fresh one", async () => {
    const again = await cli(url, ["migrate", "--json"]);
    expect(again.code).toBe(0);
    expect(parsed(again).applied).toEqual([]);
    const fresh = await freshDatabaseUrl("sqlite");
    const r = await cli(fresh, ["migrate", "--json"]);
    expect(r.code).toBe(0);
    expect(parsed(r).applied.length).toBeGreaterThan(0);
  });

  it("sessions list --json lists sessions", async () => {
    const r = await cli(url, ["sessions", "list", "--json"]);
    expect(r.code).toBe(0);
    expect(parsed(r).map((s: { id: string }) => s.id)).toEqual(expect.arrayContaining([sessionId, groupSessionId]));
  });

  it("--user takes platform:externalId (a user or a group) as well as the internal id, and names an unknown one", async () => {
    const byPlatform = parsed(await cli(url, ["sessions", "list", "--user", "telegram:5012345678", "--json"]));
    expect(byPlatform.map((s: { id: string }) => s.id)).toEqual([sessionId]);
    const internal = byPlatform[0].userId as string;
    const byUuid = parsed(await cli(url, ["sessions", "list", "--user", internal, "--json"]));
    expect(byUuid.map((s: { id: string }) => s.id)).toEqual([sessionId]);
    const group = parsed(await cli(url, ["sessions", "list", "--user", "telegram:-100777", "--json"]));
    expect(group.map((s: { id: string }) => s.id)).toEqual([groupSessionId]);

    const unknown = await cli(url, ["sessions", "list", "--user", "telegram:42", "--json"]);
    expect(unknown.code).toBe(1);
    expect(parsed(unknown).error).toMatchObject({ code: "NotFound", message: expect.stringContaining("telegram:42") });
    const malformed = await cli(url, ["sessions", "list", "--user", "alice", "--json"]);
    expect(malformed.code).toBe(2);
    expect(parsed(malformed).error!.code).toBe("Usage");
  });

  it("sessions show --json shows the session and its transcript", async () => {
    const r = await cli(url, ["sessions", "show", sessionId, "--json"]);
    expect(r.code).toBe(0);
    const s = parsed(r);
    expect(s.id).toBe(sessionId);
    expect(s.turns).toBe(1);
    expect(s.messages.map((m: { content: string }) => m.content)).toEqual(["hello there", "echo: hello there"]);
  });

  it("pairing list and approve print the same shape on stdout", async () => {
    const list = await cli(url, ["pairing", "list", "--json"]);
    expect(list.code).toBe(0);
    expect(parsed(list).requests.map((r: { code: string }) => r.code)).toEqual([pairingCode]);
    const ok = await cli(url, ["pairing", "approve", pairingCode, "--json"]);
    expect(ok.code).toBe(0);
    expect(parsed(ok).approved.senderId).toBe("999");
    const again = await cli(url, ["pairing", "approve", pairingCode, "--json"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe("");
    expect(parsed(again).error!.code).toBe("Invalid");
    const none = await cli(url, ["pairing", "approve", "--json"]);
    expect(none.code).toBe(2);
    expect(parsed(none).error!.code).toBe("Usage");
  });

  it("sessions rotate starts a successor; archive archives; errors carry codes", async () => {
    const rot = await cli(url, ["sessions", "rotate", sessionId, "--json"]);
    expect(rot.code).toBe(0);
    const { previous, current } = parsed(rot);
    expect(previous.id).toBe(sessionId);
    expect(previous.archived).toBe(true);
    expect(current.parentId).toBe(sessionId);
    const stale = await cli(url, ["sessions", "rotate", sessionId, "--json"]);
    expect(stale.code).toBe(1);
    expect(parsed(stale).error!.code).toBe("NotFound");
    const arch = await cli(url, ["sessions", "archive", current.id, "--json"]);
    expect(arch.code).toBe(0);
    expect(parsed(arch).archived).toBe(true);
    const missing = await cli(url, ["sessions", "show", "no-such-id"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^NotFound: /);
  });

  it("--version prints the package's version; help is --help", async () => {
    const { version } = JSON.parse(fs.readFileSync("package.json", "utf8")) as { version: string };
    const v = await cli(url, ["--version"]);
    expect(v).toMatchObject({ code: 0, stderr: "" });
    expect(v.stdout.trim()).toBe(`switchboard ${version}`);
    expect(parsed(await cli(url, ["--version", "--json"]))).toEqual({ version });
    const help = await cli(url, ["help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toBe((await cli(url, ["--help"])).stdout);
    expect(help.stdout).toMatch(/^usage: switchboard <command>/);
  });

  it("piped into head, a command exits quietly (0, nothing on stderr) when head stops reading", async () => {
    // A transcript of 2 MB: far more than the pipe and head's buffer hold, so the CLI is still
    // writing when head exits, and its next write meets a closed pipe (EPIPE), every time.
    const big = await freshDatabaseUrl("sqlite");
    const db = await openDatabase({ url: big });
    const ids = new IdentityStore(db);
    const bob = await ids.userId("telegram", "42", "Bob");
    const s = await new Registry(new SessionStore(db)).resolveChatChannel({ agentId: "bot", userId: bob, channel: "telegram:bot:dm:42" });
    await new TranscriptStore(db).append(s.id, [{ role: "user", content: "x".repeat(2_000_000) }], { turnIncrement: 1 });
    await db.close();
    for (const args of [
      ["sessions", "show", s.id, "--json"],
      ["sessions", "show", s.id],
    ]) {
      const child = spawn(process.execPath, [bin, ...args], {
        env: { ...process.env, LOG_LEVEL: "silent", DATABASE_URL: big },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      child.stderr.on("data", (d) => (stderr += d));
      // head -1: read until the first newline, then close the pipe.
      await new Promise<void>((resolve) => {
        let seen = "";
        child.stdout.on("data", (d) => {
          seen += d;
          if (seen.includes("\n")) {
            child.stdout.destroy();
            resolve();
          }
        });
      });
      const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
      expect({ code, stderr }, args.join(" ")).toEqual({ code: 0, stderr: "" });
    }
  });

  it("npx switchboard runs the checkout's bin straight away: no install into npx's cache, no rebuild", async () => {
    // What `npm install` does for it (its prepare links node_modules/.bin/switchboard).
    await run(process.execPath, ["scripts/link-bin.mjs"]);
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-npm-cache-"));
    const bundle = path.resolve("dist/app/switchboard.cjs");
    const builtAt = fs.statSync(bundle).mtimeMs;
    try {
      const sub = path.resolve("docs"); // from a subfolder too, as npx walks up to node_modules/.bin
      for (const cwd of [path.resolve("."), sub]) {
        const r = await run("npx", ["switchboard", "--help"], {
          cwd,
          env: { ...process.env, npm_config_cache: cache, npm_config_yes: "false", npm_config_offline: "true", LOG_LEVEL: "silent" },
        });
        expect(r.stdout).toMatch(/^usage: switchboard <command>/);
      }
      // npm 11 with a "bin" in package.json installed the project into <cache>/_npx (running
      // its prepare, the whole build, on the first call) and loaded the whole tree on each.
      expect(fs.readdirSync(cache)).not.toContain("_npx");
      expect(fs.statSync(bundle).mtimeMs).toBe(builtAt);
    } finally {
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });

  it("usage errors exit 2 with help; a bad variable exits 1 naming it", async () => {
    expect((await cli(url, ["bogus"])).code).toBe(2);
    expect((await cli(url, ["sessions", "show"])).code).toBe(2);
    const bad = await cli("mysql://nope", ["sessions", "list"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    expect(bad.stderr).toMatch(/^DATABASE_URL /);
  });

  it("with --json every error is one JSON document on stdout, usage errors and bad variables included", async () => {
    for (const args of [
      ["bogus", "--json"],
      ["sessions", "--json"],
      ["sessions", "show", "--json"],
      ["sessions", "list", "--nope", "--json"],
      ["sessions", "list", "--limit", "x", "--json"],
      ["--json"],
    ]) {
      const r = await cli(url, args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toBe("");
      expect(parsed(r).error!.code).toBe("Usage");
    }
    const bad = await cli("mysql://nope", ["sessions", "list", "--json"]);
    expect(bad.code).toBe(1);
    expect(parsed(bad).error).toMatchObject({ code: "Config", message: expect.stringMatching(/^DATABASE_URL /) });
  });

  it("only migrate creates a database: elsewhere a missing SQLite file is an error naming DATABASE_URL", async () => {
    const sub = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-cwd-"));
    for (const args of [
      ["sessions", "list"],
      ["pairing", "list"],
      ["sessions", "show", sessionId],
    ]) {
      const r = await cli(undefined, [...args, "--json"], { cwd: sub });
      expect(r.code, args.join(" ")).toBe(1);
      expect(parsed(r).error).toMatchObject({ code: "NoDatabase", message: expect.stringContaining("DATABASE_URL=file:./data/switchboard.db") });
      const human = await cli(undefined, args, { cwd: sub });
      expect(human.stderr).toMatch(/^NoDatabase: DATABASE_URL=/);
    }
    // Nothing was created, not even the folder.
    expect(fs.readdirSync(sub)).toEqual([]);
    const created = await cli(undefined, ["migrate", "--json"], { cwd: sub });
    expect(created.code).toBe(0);
    expect(fs.existsSync(path.join(sub, "data", "switchboard.db"))).toBe(true);
    const listed = await cli(undefined, ["sessions", "list", "--json"], { cwd: sub });
    expect(parsed(listed)).toEqual([]);
  });

  it("a file without the schema is an error that says to migrate", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-empty-"));
    const file = path.join(dir, "empty.db");
    fs.writeFileSync(file, "");
    const r = await cli(`file:${file}`, ["sessions", "list", "--json"]);
    expect(r.code).toBe(1);
    expect(parsed(r).error).toMatchObject({ code: "NoDatabase", message: expect.stringContaining("switchboard migrate") });
  });
});
