import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Registry, SessionError } from "../../src/session/index.js";
import { SessionStore } from "../../src/store/index.js";
import { PROVIDERS, openTestDb, type TestDb } from "../support/db.js";

const ATTEMPTS = 100;

function tally(results: PromiseSettledResult<unknown>[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of results) {
    const k = r.status === "fulfilled" ? "success" : r.reason instanceof SessionError ? r.reason.code : `error: ${String(r.reason)}`;
    counts[k] = (counts[k] ?? 0) + 1;
  }
  return counts;
}

function runWorker(args: string[]): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", path.resolve("test/support/race-worker.ts"), ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`race worker exited ${code}: ${err.slice(0, 2000)}`));
      try {
        resolve(JSON.parse(out.trim().split("\n").pop()!));
      } catch {
        reject(new Error(`race worker printed no result: ${out} ${err}`));
      }
    });
  });
}

describe.each(PROVIDERS)("compare-and-rotate race on %s", (provider) => {
  let t: TestDb;
  let registry: Registry;
  beforeAll(async () => {
    t = await openTestDb(provider);
    registry = new Registry(new SessionStore(t.db));
  });
  afterAll(async () => t.close());

  async function assertOneWinner(chat: { agentId: string; userId: string; channel: string }, first: string, counts: Record<string, number>) {
    expect(counts).toEqual({ success: 1, StaleRotation: ATTEMPTS - 1 });
    const current = await registry.resolveChatChannel(chat);
    expect(current.archived).toBe(false);
    expect(current.parentId).toBe(first);
    const all = await registry.list({ userId: chat.userId, agentId: chat.agentId }, { includeArchived: true });
    // The original and exactly one successor: losers left nothing behind.
    expect(all).toHaveLength(2);
    expect(all.filter((s) => !s.archived).map((s) => s.id)).toEqual([current.id]);
  }

  it(`${ATTEMPTS} concurrent rotations in one process: exactly one succeeds`, async () => {
    const chat = { agentId: "bot", userId: randomUUID(), channel: "telegram:bot:dm:1" };
    const first = await registry.resolveChatChannel(chat);
    const results = await Promise.allSettled(Array.from({ length: ATTEMPTS }, () => registry.rotateChannel({ ...chat, expectedSessionId: first.id })));
    await assertOneWinner(chat, first.id, tally(results));
  });

  it(`${ATTEMPTS} concurrent rotations across 3 OS processes: exactly one succeeds`, async () => {
    const chat = { agentId: "bot", userId: randomUUID(), channel: "telegram:bot:dm:2" };
    const first = await registry.resolveChatChannel(chat);
    const startAt = Date.now() + 4000;
    const shares = [34, 33, 33];
    const parts = await Promise.all(shares.map((n) => runWorker([t.url, chat.agentId, chat.userId, chat.channel, first.id, String(n), String(startAt)])));
    const counts: Record<string, number> = {};
    for (const p of parts) for (const [k, v] of Object.entries(p)) counts[k] = (counts[k] ?? 0) + v;
    await assertOneWinner(chat, first.id, counts);
  });
});
