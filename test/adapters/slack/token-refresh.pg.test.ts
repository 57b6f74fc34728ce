/**
 * Slack token rotation with several gateway processes on one PostgreSQL:
 * every process asks for a due installation at once, and exactly one
 * refreshes it (the database lease; the re-read under it; the
 * compare-and-set on the refresh token) while the others read its new token.
 * First three Databases (three pools) in this process, then three real
 * child processes.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../../src/log.js";
import { SlackInstallationStore } from "../../../src/store/slack-installations.js";
import { FakeSlack } from "../../fakes/index.js";
import { type TestDb, openTestDb } from "../../support/db.js";
import { installRotating, refreshCalls, refresherOn } from "./rotation.js";

const ROUNDS = 5;
const T1 = { enterpriseId: "", teamId: "T1" };

/** Installs T1 with a 60 s token; returns the store and the clock reading at which the token is 10 s from expiry. */
async function setUp(sl: FakeSlack, db: TestDb["db"]) {
  const rows = new SlackInstallationStore(db);
  const t0 = Date.now();
  const first = await installRotating(sl, rows, "T1", 60, t0);
  return { rows, first, dueAt: async () => (await rows.find(T1))!.botExpiresAt!.getTime() - 10_000 };
}

describe("Slack token rotation across processes on PostgreSQL", () => {
  it("three Databases ask current() at once, five rounds: one refresh a round, all three get the same new token", async () => {
    const sl = new FakeSlack();
    await sl.start();
    const a = await openTestDb("postgresql");
    const others = [await openTestDb("postgresql", { url: a.url }), await openTestDb("postgresql", { url: a.url })];
    try {
      const { rows, first, dueAt } = await setUp(sl, a.db);
      let clock = 0;
      const refreshers = [a, ...others].map((t, i) => refresherOn(t.db, sl, { log: silentLogger, now: () => clock, marginMs: 30_000, owner: `p${i}` }));
      const seen = new Set([first.token]);
      for (let round = 1; round <= ROUNDS; round++) {
        clock = await dueAt();
        const got = await Promise.all(refreshers.map((r) => r.current(T1)));
        expect(refreshCalls(sl)).toHaveLength(round);
        const tokens = new Set(got.map((g) => g?.botToken));
        expect(tokens.size).toBe(1);
        const [token] = tokens;
        expect(seen.has(token!)).toBe(false);
        seen.add(token!);
        expect((await rows.find(T1))?.botToken).toBe(token);
        expect(refreshers.flatMap((r) => r.problems())).toEqual([]);
      }
    } finally {
      for (const t of others) await t.close();
      await a.close();
      await sl.close();
    }
  });

  it("three child processes ask current() at once, five rounds: one refresh a round, all three get the same new token", async () => {
    const sl = new FakeSlack();
    await sl.start();
    const t = await openTestDb("postgresql");
    const children: Child[] = [];
    try {
      const { rows, first, dueAt } = await setUp(sl, t.db);
      for (let i = 0; i < 3; i++) children.push(await startChild([t.url, sl.apiUrl, sl.oauth.clientId, sl.oauth.clientSecret, `child-${i}`]));
      const seen = new Set([first.token]);
      for (let round = 1; round <= ROUNDS; round++) {
        const at = await dueAt();
        const got = await Promise.all(children.map((c) => c.ask(`${at} T1`)));
        expect(refreshCalls(sl)).toHaveLength(round);
        expect(got.every((g) => g.error === undefined)).toBe(true);
        const tokens = new Set(got.map((g) => g.token));
        expect(tokens.size).toBe(1);
        const [token] = tokens;
        expect(seen.has(token as string)).toBe(false);
        seen.add(token as string);
        expect((await rows.find(T1))?.botToken).toBe(token);
      }
    } finally {
      for (const c of children) await c.close();
      await t.close();
      await sl.close();
    }
  });
});

interface Child {
  ask(line: string): Promise<{ token?: string; expiresAt?: number; error?: string }>;
  close(): Promise<void>;
}

/** test/support/slack-refresh-child.ts as its own OS process: one request line in, one JSON line out. */
async function startChild(args: string[]): Promise<Child> {
  const proc: ChildProcessWithoutNullStreams = spawn(process.execPath, ["--import", "tsx", path.resolve("test/support/slack-refresh-child.ts"), ...args], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  proc.stderr.on("data", (c: Buffer) => {
    stderr += c.toString("utf8");
  });
  const lines = createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<string> => {
    const r = await lines.next();
    if (r.done) throw new Error(`the refresh child exited: ${stderr.slice(-2000)}`);
    return r.value;
  };
  expect(await next()).toBe("ready");
  return {
    ask: async (line) => {
      proc.stdin.write(`${line}\n`);
      return JSON.parse(await next()) as { token?: string; expiresAt?: number; error?: string };
    },
    close: async () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once("exit", r));
      proc.stdin.end();
      await exited;
    },
  };
}
