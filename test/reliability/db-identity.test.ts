/**
 * The database is who it says it is: the SQLite file deleted, or replaced by
 * another file (a restore done under a running gateway), while the real
 * `switchboard serve` runs. The gateway must notice, stop acknowledging
 * (Slack gets non-2xx, so it keeps the events), and answer /healthz 503 with
 * the reason. Before the fix it went on acknowledging into the unlinked
 * file, health green, and the next start found an empty database.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort } from "../../tools/pg-cluster.js";
import { FakeSlack } from "../fakes/slack.js";
import { report, sleep, sqliteFileOf, sqliteUrl, until } from "./helpers.js";

let child: ChildProcess | undefined;
let slack: FakeSlack | undefined;
afterEach(async () => {
  child?.kill("SIGKILL");
  child = undefined;
  await slack?.close();
  slack = undefined;
});

async function serve(env: Record<string, string>, port: number): Promise<{ logs: () => string }> {
  const c = spawn(process.execPath, [path.resolve("bin/switchboard.mjs"), "serve"], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  child = c;
  let out = "";
  c.stdout!.on("data", (d) => (out = (out + d).slice(-20_000)));
  c.stderr!.on("data", (d) => (out = (out + d).slice(-20_000)));
  await until(
    async () => {
      if (c.exitCode !== null) throw new Error(`the gateway exited ${c.exitCode}: ${out}`);
      return (await fetch(`http://127.0.0.1:${port}/healthz?ready=1`).catch(() => undefined))?.status === 200;
    },
    30_000,
    "the gateway ready",
  );
  return { logs: () => out };
}

describe.each(["deleted", "replaced"] as const)("the SQLite file %s under a running switchboard serve", (how) => {
  it("intake stops with a clear error, /healthz 503 with the reason, nothing acknowledged after it", async () => {
    slack = new FakeSlack();
    await slack.start();
    const port = await freePort();
    const url = sqliteUrl();
    const file = sqliteFileOf(url);
    const gw = await serve(
      {
        DATABASE_URL: url,
        HTTP_PORT: String(port),
        DM_POLICY: "open",
        LOG_LEVEL: "info",
        CONSOLE_ENABLED: "false",
        SLACK_BOT_TOKEN: slack.botToken,
        SLACK_SIGNING_SECRET: slack.signingSecret,
        SLACK_API_URL: slack.apiUrl,
      },
      port,
    );
    const events = `http://127.0.0.1:${port}/slack/events`;
    const post = (i: number) => slack!.postEvent(events, slack!.events.message({ channel: "D0DM00001", user: "U0ALICE", text: `m${i}` })).then((r) => r.status);

    const before = await Promise.all(Array.from({ length: 5 }, (_, i) => post(i)));
    expect(before).toEqual([200, 200, 200, 200, 200]);

    // Traffic keeps coming while the file goes away.
    const during: Array<Promise<{ sentAfter: boolean; status: number }>> = [];
    let gone = false;
    let n = 100;
    const traffic = (async () => {
      for (let k = 0; k < 40; k++) {
        const sentAfter = gone;
        during.push(post(n++).then((status) => ({ sentAfter, status })));
        await sleep(25);
      }
    })();
    await sleep(200);
    if (how === "deleted") fs.unlinkSync(file);
    else {
      // A restore from a backup: another file renamed over it (a new inode).
      fs.copyFileSync(file, `${file}.restore`);
      fs.renameSync(`${file}.restore`, file);
    }
    gone = true;
    await traffic;
    const results = await Promise.all(during);
    const health = await until(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 503, 10_000, "/healthz 503");
    const body = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as { store: { ok: boolean; reason: string; fenced: boolean } };
    const after = await Promise.all(Array.from({ length: 10 }, (_, i) => post(1000 + i)));
    const ackedAfter = results.filter((r) => r.sentAfter && r.status === 200).length + after.filter((s) => s === 200).length;
    report(`db-${how}`, {
      ackedBefore: before.length + results.filter((r) => !r.sentAfter && r.status === 200).length,
      sentAfter: results.filter((r) => r.sentAfter).length + after.length,
      ackedAfter,
      healthz: health ? 503 : 200,
      reason: body.store.reason,
    });
    expect(ackedAfter).toBe(0);
    expect(after.every((s) => s >= 500)).toBe(true);
    expect(body.store).toMatchObject({ ok: false, fenced: true });
    expect(body.store.reason).toContain(how === "deleted" ? "was deleted" : "was replaced");
    await until(() => gw.logs().includes("the database is not the one this gateway opened"), 5_000, "the error log line");
  });
});
