/**
 * Faults: PostgreSQL restarted mid-traffic, a hanging model server, a sink
 * that throws, and the SQLite file locked by another process.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { startPgCluster, type PgCluster } from "../../tools/pg-cluster.js";
import { FakeOpenAi, textReply } from "../fakes/openai.js";
import { openDatabase, StoreError } from "../../src/store/index.js";
import { boot, inboundStatuses, report, RetryingAdapter, sleep, slowEcho, sqliteFileOf, sqliteUrl, tally, until, type Booted } from "./helpers.js";
import { prisma } from "../support/prisma.js";

let booted: Booted | undefined;
let cluster: PgCluster | undefined;
let fake: FakeOpenAi | undefined;
let locker: ChildProcess | undefined;

afterEach(async () => {
  locker?.kill("SIGKILL");
  locker = undefined;
  await booted?.app.stop().catch(() => undefined);
  booted = undefined;
  await fake?.close();
  fake = undefined;
  cluster?.stop();
  cluster = undefined;
});

describe("PostgreSQL restarted mid-traffic", () => {
  it("every message sent before, during and after the restart is answered exactly once, without restarting the gateway", async () => {
    cluster = await startPgCluster();
    const dbUrl = await cluster.createDatabase();
    const adapter = new RetryingAdapter("pgr");
    booted = await boot(dbUrl, [adapter], {}, { agentFactory: slowEcho(150) });
    const expected: string[] = [];
    const intake: Promise<unknown>[] = [];
    const send = (phase: string, i: number) => {
      const text = `${phase}-${i}`;
      expected.push(`echo: ${text}`);
      intake.push(adapter.deliver(adapter.dm(`u${i % 6}`, text)));
    };
    // Before: answered while the server is up.
    for (let i = 0; i < 10; i++) send("before", i);
    await until(() => adapter.sent.length >= 10, 30_000, "replies before the restart");
    // The test cluster runs synchronous_commit=off and restart() is an immediate (crash) stop: let the WAL writer flush first.
    await sleep(500);
    // During: recorded and mid-turn (the agent takes 150 ms) when the server goes down.
    for (let i = 10; i < 20; i++) send("during", i);
    await sleep(60);
    const t0 = Date.now();
    cluster.restart(); // pg_ctl stop -m immediate + start: every connection of the pool dies
    const restartMs = Date.now() - t0;
    // After: sent on a pool full of dead connections.
    for (let i = 20; i < 30; i++) send("after", i);
    await Promise.allSettled(intake);
    const allAnswered = await until(
      () =>
        tally(
          expected,
          adapter.sent.map((s) => s.text),
        ).missing.length === 0,
      45_000,
      "every message answered",
    );
    await sleep(1000); // a duplicate would show up now
    const t = tally(
      expected,
      adapter.sent.map((s) => s.text),
    );
    const statuses = await inboundStatuses(booted.app);
    report("pg-restart", {
      messages: expected.length,
      answered: t.answered,
      missing: t.missing.length,
      duplicates: t.duplicates.length,
      inboundRetries: adapter.inboundFailures,
      restartMs,
      inboundStatuses: statuses,
      missingTexts: t.missing.slice(0, 10),
      allAnswered,
      firstInboundError: adapter.errors[0]?.slice(0, 200),
    });
    expect({ missing: t.missing, duplicates: t.duplicates }).toEqual({ missing: [], duplicates: [] });
    // The next message after everything settled works too.
    await adapter.deliver(adapter.dm("u1", "after-all"));
    expect(await until(() => adapter.sent.some((s) => s.text === "echo: after-all"), 10_000, "the next message")).toBe(true);
  }, 120_000);
});

describe("the agent provider hangs", () => {
  it("AGENT_TIMEOUT fires, the user gets an error notice, the next message works", async () => {
    fake = await FakeOpenAi.start();
    fake.enqueue({ noHeaders: true }); // the model server accepts the request and never answers
    fake.enqueue(textReply(["all ", "good"]));
    const adapter = new RetryingAdapter("hang");
    booted = await boot(sqliteUrl(), [adapter], { OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test", OPENAI_MODEL: "fake-model", AGENT_TIMEOUT: "1s" });
    const t0 = Date.now();
    await adapter.deliver(adapter.dm("42", "are you there?"));
    const noticed = await until(() => adapter.sent.length >= 1, 15_000, "a timeout notice");
    const noticeMs = Date.now() - t0;
    const notice = adapter.sent[0]?.text ?? "";
    await adapter.deliver(adapter.dm("42", "second try"));
    const next = await until(() => adapter.sent.some((s) => s.text === "all good"), 15_000, "the next answer");
    report("agent-hangs", {
      noticed,
      noticeMs,
      notice,
      nextAnswered: next,
      modelRequests: fake.requests.length,
      hungRequestClosedByClient: fake.requests[0]?.closedByClient,
    });
    expect(noticed).toBe(true);
    expect(notice).toMatch(/did not answer within 1 s/);
    expect(noticeMs).toBeLessThan(8_000);
    expect(next).toBe(true);
    expect(fake.requests[0]?.closedByClient).toBe(true); // the hung request was aborted, not left open
  }, 60_000);
});

describe("a sink throws", () => {
  it("the platform sink still delivers every reply", async () => {
    const adapter = new RetryingAdapter("sink");
    booted = await boot(sqliteUrl(), [adapter]);
    let throws = 0;
    let rejects = 0;
    booted.app.runner.withSink([], () => {
      throws++;
      throw new Error("sink exploded");
    });
    booted.app.runner.withSink([], async () => {
      rejects++;
      throw new Error("async sink exploded");
    });
    const expected: string[] = [];
    for (let i = 0; i < 20; i++) {
      expected.push(`echo: m${i}`);
      await adapter.deliver(adapter.dm(`s${i % 4}`, `m${i}`));
    }
    await until(
      () =>
        tally(
          expected,
          adapter.sent.map((s) => s.text),
        ).missing.length === 0,
      20_000,
      "replies",
    );
    const t = tally(
      expected,
      adapter.sent.map((s) => s.text),
    );
    report("sink-throws", {
      messages: expected.length,
      answered: t.answered,
      missing: t.missing.length,
      duplicates: t.duplicates.length,
      syncThrows: throws,
      asyncRejects: rejects,
    });
    expect(throws).toBeGreaterThan(0);
    expect(rejects).toBeGreaterThan(0);
    expect({ missing: t.missing.length, duplicates: t.duplicates.length }).toEqual({ missing: 0, duplicates: 0 });
  }, 60_000);
});

/** A separate process that opens the SQLite file and holds BEGIN EXCLUSIVE until told (or for holdMs). */
function lockFile(file: string, holdMs: number): Promise<{ child: ChildProcess; released: Promise<number> }> {
  const code = `
    const Database = require("better-sqlite3");
    const db = new Database(${JSON.stringify(file)});
    db.pragma("busy_timeout = 10000");
    db.exec("BEGIN EXCLUSIVE");
    process.stdout.write("LOCKED\\n");
    const release = () => { db.exec("COMMIT"); db.close(); process.stdout.write("RELEASED " + Date.now() + "\\n"); process.exit(0); };
    setTimeout(release, ${holdMs});
    process.stdin.on("data", release);
  `;
  const child = spawn(process.execPath, ["-e", code], { cwd: process.cwd(), stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  let releasedAt!: (t: number) => void;
  const released = new Promise<number>((r) => (releasedAt = r));
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (d) => {
      out += String(d);
      if (out.includes("LOCKED")) resolve({ child, released });
      const m = /RELEASED (\d+)/.exec(out);
      if (m) releasedAt(Number(m[1]));
    });
    child.once("exit", (c) => {
      if (!out.includes("LOCKED")) reject(new Error(`the locking process exited ${c} before locking`));
    });
  });
}

describe("the SQLite file is locked by another process", () => {
  it("a 1.5 s lock: writes wait (bounded) and every message is answered after the lock is released", async () => {
    const dbUrl = sqliteUrl();
    const adapter = new RetryingAdapter("lock");
    booted = await boot(dbUrl, [adapter]);
    await adapter.deliver(adapter.dm("1", "warm-up"));
    await until(() => adapter.sent.length === 1, 10_000, "warm-up");
    const lock = await lockFile(sqliteFileOf(dbUrl), 1500);
    locker = lock.child;
    const t0 = Date.now();
    const expected: string[] = [];
    const intake: Promise<unknown>[] = [];
    for (let i = 0; i < 12; i++) {
      expected.push(`echo: locked-${i}`);
      intake.push(adapter.deliver(adapter.dm(`l${i % 3}`, `locked-${i}`)));
    }
    await Promise.allSettled(intake);
    const ok = await until(
      () =>
        tally(
          expected,
          adapter.sent.map((s) => s.text),
        ).missing.length === 0,
      30_000,
      "replies after the lock",
    );
    const releasedAt = await lock.released;
    const lastReplyAt = Math.max(...adapter.sent.map((s) => s.at));
    const t = tally(
      expected,
      adapter.sent.map((s) => s.text),
    );
    report("sqlite-lock-short", {
      lockMs: releasedAt - t0,
      messages: expected.length,
      answered: t.answered,
      missing: t.missing.length,
      duplicates: t.duplicates.length,
      inboundRetries: adapter.inboundFailures,
      firstReplyAfterReleaseMs: Math.min(...adapter.sent.slice(1).map((s) => s.at)) - releasedAt,
      lastReplyAfterReleaseMs: lastReplyAt - releasedAt,
      allAnswered: ok,
    });
    expect({ missing: t.missing.length, duplicates: t.duplicates.length }).toEqual({ missing: 0, duplicates: 0 });
  }, 60_000);

  it("a lock far longer than the bounded wait (store level): a clear Busy error within the bound, not a hang; the write lands once the lock goes", async () => {
    const dbUrl = sqliteUrl();
    const db = await openDatabase({ url: dbUrl, busyTimeoutMs: 200, maxRetries: 3 });
    try {
      const lock = await lockFile(sqliteFileOf(dbUrl), 60_000);
      locker = lock.child;
      const t0 = Date.now();
      let err: unknown;
      try {
        await prisma(db).write((c) => c.adapterState.create({ data: { key: "k1", value: "v1" } }));
      } catch (e) {
        err = e;
      }
      const failedAfterMs = Date.now() - t0;
      lock.child.stdin!.write("go\n");
      await lock.released;
      await prisma(db).write((c) => c.adapterState.create({ data: { key: "k1", value: "v1" } }));
      const rows = await prisma(db).read((c) => c.adapterState.count());
      report("sqlite-lock-long-store", {
        failedAfterMs,
        code: (err as StoreError | undefined)?.code,
        message: (err as Error | undefined)?.message,
        rowsAfterRelease: rows,
      });
      expect(err).toBeInstanceOf(StoreError);
      expect((err as StoreError).code).toBe("Busy");
      expect((err as Error).message).toMatch(/busy/i);
      expect(failedAfterMs).toBeLessThan(10_000);
      expect(rows).toBe(1);
    } finally {
      await db.close();
    }
  }, 60_000);

  it("a lock far longer than the gateway's bounded wait: intake fails with a clear error (not a hang); nothing is lost once the lock goes", async () => {
    const dbUrl = sqliteUrl();
    const adapter = new RetryingAdapter("longlock");
    booted = await boot(dbUrl, [adapter], {}, { agentFactory: slowEcho(300) });
    await adapter.deliver(adapter.dm("1", "warm-up"));
    await until(() => adapter.sent.length === 1, 10_000, "warm-up");
    // One message is recorded and mid-turn when the lock is taken: its commit must wait out the lock.
    const expected = ["echo: in-flight"];
    await adapter.deliver(adapter.dm("2", "in-flight"));
    const lock = await lockFile(sqliteFileOf(dbUrl), 600_000);
    locker = lock.child;
    const t0 = Date.now();
    expected.push("echo: while-locked");
    const intake = adapter.deliver(adapter.dm("3", "while-locked"));
    // Hold the lock until the gateway gives up on at least one write (its bounded wait).
    const gaveUp = await until(() => adapter.inboundFailures > 0, 90_000, "the gateway's bounded wait to end");
    const firstErrorMs = Date.now() - t0;
    lock.child.stdin!.write("go\n");
    const releasedAt = await lock.released;
    await intake;
    const ok = await until(
      () =>
        tally(
          expected,
          adapter.sent.map((s) => s.text),
        ).missing.length === 0,
      30_000,
      "replies after the lock",
    );
    const t = tally(
      expected,
      adapter.sent.map((s) => s.text),
    );
    const statuses = await inboundStatuses(booted.app);
    report("sqlite-lock-long-gateway", {
      gaveUp,
      firstErrorMs,
      lockMs: releasedAt - t0,
      firstError: adapter.errors[0]?.slice(0, 200),
      inboundRetries: adapter.inboundFailures,
      messages: expected.length,
      answered: t.answered,
      missing: t.missing,
      duplicates: t.duplicates.length,
      inboundStatuses: statuses,
      allAnswered: ok,
    });
    expect(gaveUp).toBe(true);
    expect(adapter.errors[0]).toMatch(/busy|lock/i);
    expect({ missing: t.missing, duplicates: t.duplicates }).toEqual({ missing: [], duplicates: [] });
  }, 180_000);
});
