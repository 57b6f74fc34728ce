import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { Registry } from "../src/session/index.js";
import { openDatabase, SessionStore, TranscriptStore } from "../src/store/index.js";
import { freshDatabaseUrl } from "./support/db.js";

const run = promisify(execFile);
const bin = path.resolve("bin/switchboard.mjs");

async function cli(url: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [bin, ...args], { env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: "silent" } });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

describe("switchboard CLI", () => {
  let url: string;
  let sessionId: string;
  beforeAll(async () => {
    url = await freshDatabaseUrl("sqlite");
    const db = await openDatabase({ url });
    const registry = new Registry(new SessionStore(db));
    const s = await registry.resolveChatChannel({ agentId: "bot", userId: "11111111-1111-4111-8111-111111111111", channel: "telegram:bot:dm:5" });
    await new TranscriptStore(db).append(s.id, [{ role: "user", content: "hello there" }, { role: "assistant", content: "echo: hello there" }], { turnIncrement: 1 });
    sessionId = s.id;
    await db.close();
  });

  it("migrate reports that nothing is pending on a migrated database, and applies on a fresh one", async () => {
    const again = await cli(url, "migrate", "--json");
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).applied).toEqual([]);
    const fresh = await freshDatabaseUrl("sqlite");
    const r = await cli(fresh, "migrate", "--json");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).applied.length).toBeGreaterThan(0);
  });

  it("sessions list --json lists sessions", async () => {
    const r = await cli(url, "sessions", "list", "--json");
    expect(r.code).toBe(0);
    const list = JSON.parse(r.stdout);
    expect(list.map((s: { id: string }) => s.id)).toContain(sessionId);
  });

  it("sessions show --json shows the session and its transcript", async () => {
    const r = await cli(url, "sessions", "show", sessionId, "--json");
    expect(r.code).toBe(0);
    const s = JSON.parse(r.stdout);
    expect(s.id).toBe(sessionId);
    expect(s.turns).toBe(1);
    expect(s.messages.map((m: { content: string }) => m.content)).toEqual(["hello there", "echo: hello there"]);
  });

  it("sessions rotate starts a successor; archive archives; errors carry codes", async () => {
    const rot = await cli(url, "sessions", "rotate", sessionId, "--json");
    expect(rot.code).toBe(0);
    const { previous, current } = JSON.parse(rot.stdout);
    expect(previous.id).toBe(sessionId);
    expect(previous.archived).toBe(true);
    expect(current.parentId).toBe(sessionId);
    const stale = await cli(url, "sessions", "rotate", sessionId, "--json");
    expect(stale.code).toBe(1);
    expect(JSON.parse(stale.stdout).error.code).toBe("NotFound");
    const arch = await cli(url, "sessions", "archive", current.id, "--json");
    expect(arch.code).toBe(0);
    expect(JSON.parse(arch.stdout).archived).toBe(true);
    const missing = await cli(url, "sessions", "show", "no-such-id");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^NotFound: /);
  });

  it("usage errors exit 2 with help; a bad variable exits 1 naming it", async () => {
    expect((await cli(url, "bogus")).code).toBe(2);
    expect((await cli(url, "sessions", "show")).code).toBe(2);
    const bad = await cli("mysql://nope", "sessions", "list");
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    expect(bad.stderr).toMatch(/^DATABASE_URL /);
  });
});
