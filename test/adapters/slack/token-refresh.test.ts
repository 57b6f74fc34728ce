/**
 * Slack token rotation on SQLite: the real SlackTokenRefresher over the real
 * stores (a migrated SQLite file, the database lease) and the Slack fake's
 * oauth.v2.access over loopback. Time is the injected clock, never a window
 * of the wall clock.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AdapterError } from "../../../adapters/types.js";
import { silentLogger } from "../../../src/log.js";
import { LeaseStore } from "../../../src/store/leases.js";
import { SlackInstallationStore } from "../../../src/store/slack-installations.js";
import { FakeSlack } from "../../fakes/index.js";
import { type TestDb, openTestDb } from "../../support/db.js";
import { capturedLog, client, installRotating, refreshCalls, refresherOn } from "./rotation.js";

let sl: FakeSlack;
let t: TestDb;
let rows: SlackInstallationStore;
let clock: number;
const t0 = Date.now();
const now = () => clock;
const T1 = { enterpriseId: "", teamId: "T1" };

beforeEach(async () => {
  sl = new FakeSlack();
  await sl.start();
  t = await openTestDb("sqlite");
  rows = new SlackInstallationStore(t.db);
  clock = t0;
});
afterEach(async () => {
  await t.close();
  await sl.close();
});

describe("SlackTokenRefresher", () => {
  it("refreshes once when inside the margin: new token, refresh token and expiry stored; the new token works; then no call", async () => {
    const first = await installRotating(sl, rows, "T1", 60, t0);
    const outcomes: string[] = [];
    const r = refresherOn(t.db, sl, { log: silentLogger, now, marginMs: 30_000, onRefresh: (o, k) => outcomes.push(`${o} ${k}`) });
    clock = t0 + 10_000;
    expect((await r.current(T1))?.botToken).toBe(first.token);
    expect(refreshCalls(sl)).toHaveLength(0);

    clock = t0 + 35_000;
    const next = await r.current(T1);
    expect(refreshCalls(sl)).toHaveLength(1);
    expect(refreshCalls(sl)[0]!.params).toMatchObject({ grant_type: "refresh_token", refresh_token: first.refreshToken, client_id: sl.oauth.clientId });
    expect(next?.botToken).not.toBe(first.token);
    expect(next?.botRefreshToken).not.toBe(first.refreshToken);
    expect(next?.botExpiresAt?.getTime()).toBe(clock + 60_000);
    expect(await rows.find(T1)).toEqual(next);
    expect(await client(sl, next!.botToken).auth.test()).toMatchObject({ team_id: "T1", user_id: "UT1BOT" });
    expect(outcomes).toEqual(["ok :T1"]);

    expect((await r.current(T1))?.botToken).toBe(next?.botToken);
    expect(refreshCalls(sl)).toHaveLength(1);
    expect(r.problems()).toEqual([]);
  });

  it("a failing refresh is retried with backoff and reported; past expiry current() throws Transient; then it succeeds and clears", async () => {
    const first = await installRotating(sl, rows, "T2", 60, t0);
    const T2 = { enterpriseId: "", teamId: "T2" };
    const { log, lines } = capturedLog();
    const outcomes: string[] = [];
    const r = refresherOn(t.db, sl, { log, now, marginMs: 30_000, onRefresh: (o) => outcomes.push(o) });
    sl.failNext("oauth.v2.access", { error: "internal_error" }, 2);

    // Due but still valid: the old token is answered and the failure reported.
    clock = t0 + 35_000;
    expect((await r.current(T2))?.botToken).toBe(first.token);
    expect(r.problems()).toEqual([{ enterpriseId: "", teamId: "T2", failures: 1, lastError: "internal_error", nextAttemptAt: new Date(clock + 1_000) }]);

    // Expired, and the second try fails too: Transient, so the send is retried later, not lost.
    clock = t0 + 61_000;
    const err = await r.current(T2).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AdapterError);
    expect(err).toMatchObject({ code: "Transient", retryAfterMs: 2_000 });
    expect((err as Error).message).toMatch(/team T2 expired .*internal_error.*retried in 2 s/);
    expect(r.problems()).toEqual([{ enterpriseId: "", teamId: "T2", failures: 2, lastError: "internal_error", nextAttemptAt: new Date(clock + 2_000) }]);

    // Within the backoff neither current() nor the sweep calls Slack.
    await expect(r.current(T2)).rejects.toMatchObject({ code: "Transient" });
    await r.sweep();
    expect(refreshCalls(sl)).toHaveLength(2);

    clock += 2_000;
    await r.sweep();
    expect(refreshCalls(sl)).toHaveLength(3);
    expect(r.problems()).toEqual([]);
    const next = await r.current(T2);
    expect(next?.botToken).not.toBe(first.token);
    expect(await client(sl, next!.botToken).auth.test()).toMatchObject({ team_id: "T2" });
    expect(refreshCalls(sl)).toHaveLength(3);
    expect(outcomes).toEqual(["failed", "failed", "ok"]);

    const warned = lines.map((l) => JSON.parse(l) as { level: string; msg: string; team?: string }).filter((l) => l.level === "warn");
    expect(warned.map((l) => l.team)).toEqual(["team T2", "team T2"]);
    const text = lines.join("") + (err as Error).message;
    for (const secret of [first.token, first.refreshToken, next!.botToken, next!.botRefreshToken!, sl.oauth.clientSecret]) expect(text).not.toContain(secret);
  });

  it("a refresh token is spent once: Slack refuses it again, and the store's rotate with it changes nothing", async () => {
    const first = await installRotating(sl, rows, "T1", 60, t0);
    const r = refresherOn(t.db, sl, { log: silentLogger, now, marginMs: 30_000 });
    clock = t0 + 35_000;
    const next = (await r.current(T1))!;
    await expect(
      client(sl).oauth.v2.access({
        client_id: sl.oauth.clientId,
        client_secret: sl.oauth.clientSecret,
        grant_type: "refresh_token",
        refresh_token: first.refreshToken,
      }),
    ).rejects.toMatchObject({ data: { error: "invalid_refresh_token" } });
    expect(await rows.rotate(T1, first.refreshToken, { botToken: "xoxe.xoxb-stale", botRefreshToken: "xoxe-1-stale", botExpiresAt: new Date(clock) })).toBe(
      false,
    );
    expect(await rows.find(T1)).toEqual(next);
  });

  it("two refreshers on one database ask at once: one refresh under the lease, both answer the new token", async () => {
    const first = await installRotating(sl, rows, "T1", 60, t0);
    const a = refresherOn(t.db, sl, { log: silentLogger, now, marginMs: 30_000, owner: "process-a" });
    const b = refresherOn(t.db, sl, { log: silentLogger, now, marginMs: 30_000, owner: "process-b" });
    clock = t0 + 35_000;
    const [x, y] = await Promise.all([a.current(T1), b.current(T1)]);
    expect(refreshCalls(sl)).toHaveLength(1);
    expect(x?.botToken).not.toBe(first.token);
    expect(y?.botToken).toBe(x?.botToken);
    // The lease was released: the next process to need it gets it at once.
    expect(await new LeaseStore(t.db).acquire("slack-token-refresh::T1", "process-c", 1_000)).toBe(true);
  });

  it("a new token the database did not take is reported (store_error) and the stored row stands", async () => {
    const f = await openTestDb("sqlite", {
      faults: {
        onStatement: (op) => {
          if (op === "slack-installation-rotate") throw new Error("disk I/O error");
        },
      },
    });
    try {
      const store = new SlackInstallationStore(f.db);
      const first = await installRotating(sl, store, "T1", 60, t0);
      const r = refresherOn(f.db, sl, { log: silentLogger, now, marginMs: 30_000 });
      clock = t0 + 35_000;
      expect((await r.current(T1))?.botToken).toBe(first.token);
      expect(r.problems()).toMatchObject([{ teamId: "T1", failures: 1, lastError: "store_error" }]);
      expect((await store.find(T1))?.botRefreshToken).toBe(first.refreshToken);
    } finally {
      await f.close();
    }
  });

  it("a lease left by a crashed process is waited out, then taken: the token is refreshed, not given up on", async () => {
    const first = await installRotating(sl, rows, "T1", 60, t0);
    // Another process took the lease and died: it expires on its own (a short TTL here, 30 s in the refresher).
    expect(await new LeaseStore(t.db).acquire("slack-token-refresh::T1", "crashed-process", 300)).toBe(true);
    const r = refresherOn(t.db, sl, { log: silentLogger, now, marginMs: 30_000 });
    clock = t0 + 35_000;
    const next = await r.current(T1);
    expect(refreshCalls(sl)).toHaveLength(1);
    expect(next?.botToken).not.toBe(first.token);
  });

  it("start() sweeps at once and on its timer; stop() ends it", async () => {
    const first = await installRotating(sl, rows, "T1", 60, t0);
    const r = refresherOn(t.db, sl, { log: silentLogger, now, marginMs: 30_000, sweepEveryMs: 20 });
    r.start();
    await r.stop();
    expect(refreshCalls(sl)).toHaveLength(0);
    clock = t0 + 35_000;
    r.start();
    await sl.waitFor(() => refreshCalls(sl).length === 1);
    // stop() waits for the sweep under way, which saves the new token.
    await r.stop();
    expect((await rows.find(T1))?.botToken).not.toBe(first.token);
  });

  it("an installation without an expiry is answered as stored, with no lease and no Slack call; an unknown one is undefined", async () => {
    const r = await client(sl).oauth.v2.access({ client_id: sl.oauth.clientId, client_secret: sl.oauth.clientSecret, code: sl.oauth.code({ teamId: "T3" }) });
    await rows.save({
      enterpriseId: "",
      teamId: "T3",
      botToken: r.access_token!,
      botUserId: "UT3BOT",
      botId: "BT3",
      botScopes: "chat:write",
      installerUserId: "UT3ADMIN",
      source: "oauth",
    });
    const locks = new LeaseStore(t.db);
    const asked: string[] = [];
    const refresher = refresherOn(t.db, sl, {
      log: silentLogger,
      now,
      locks: {
        acquire: (k, o, ttl) => {
          asked.push(k);
          return locks.acquire(k, o, ttl);
        },
        release: (k, o) => locks.release(k, o),
      },
    });
    clock = t0 + 365 * 86_400_000;
    expect((await refresher.current({ enterpriseId: "", teamId: "T3" }))?.botToken).toBe(r.access_token);
    await refresher.sweep();
    expect(await refresher.current({ enterpriseId: "", teamId: "T9" })).toBeUndefined();
    expect(asked).toEqual([]);
    expect(refreshCalls(sl)).toHaveLength(0);
  });
});
