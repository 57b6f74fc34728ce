import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { MemoryAdapter } from "./support/memory-adapter.js";
import { eventually, startApp } from "./support/app.js";

const run = promisify(execFile);
const bin = path.resolve("bin/switchboard.mjs");

async function cli(url: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [bin, ...args], { env: { ...process.env, LOG_LEVEL: "silent", DATABASE_URL: url } });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

describe("switchboard schedule add | list | cancel", { timeout: 180_000 }, () => {
  it("adds jobs for a chat or a session, lists them with their status, cancels them; errors carry codes", async () => {
    const adapter = new MemoryAdapter();
    const { app, config } = await startApp("sqlite", [adapter]);
    await adapter.ctx.inbound(adapter.dm("42", "hello"));
    await eventually(
      () => adapter.to("42"),
      (s) => s.length === 1,
      10_000,
      "the echo",
    );
    const session = (await app.registry.listAll({ kinds: ["chat"] }))[0]!.id;
    await app.stop();
    const url = config.DATABASE_URL;

    const added = await cli(url, [
      "schedule",
      "add",
      "--platform",
      "telegram",
      "--chat",
      "42",
      "--cron",
      "0 9 * * 1-5",
      "--tz",
      "Europe/Paris",
      "--text",
      "standup",
      "--json",
    ]);
    expect(added.code).toBe(0);
    const job = JSON.parse(added.stdout);
    expect(job).toMatchObject({
      conversation: { platform: "telegram", botId: "777", chat: "42" },
      schedule: { kind: "cron", spec: "0 9 * * 1-5", timezone: "Europe/Paris" },
      status: "active",
      createdBy: "cli",
      lastStatus: null,
    });
    const bySession = JSON.parse(
      (await cli(url, ["schedule", "add", "--session", session, "--in", "2h", "--action", "agent", "--text", "how is it going?", "--json"])).stdout,
    );
    expect(bySession).toMatchObject({ action: "agent", schedule: { kind: "once" }, conversation: { chat: "42" } });
    const listed = JSON.parse((await cli(url, ["schedule", "list", "--json"])).stdout);
    expect(listed.jobs.map((j: { id: string }) => j.id)).toEqual([job.id, bySession.id]);
    const human = await cli(url, ["schedule", "list"]);
    expect(human.stdout).toContain("cron 0 9 * * 1-5 (Europe/Paris), active, next ");
    const cancelled = JSON.parse((await cli(url, ["schedule", "cancel", job.id, "--json"])).stdout);
    expect(cancelled).toMatchObject({ id: job.id, status: "cancelled" });
    expect(JSON.parse((await cli(url, ["schedule", "cancel", job.id, "--json"])).stdout)).toEqual({
      ok: false,
      error: { code: "Invalid", message: expect.stringContaining("cancelled") },
    });
    const unknown = await cli(url, ["schedule", "add", "--platform", "telegram", "--chat", "nobody", "--in", "1h", "--text", "x", "--json"]);
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stdout).error.code).toBe("NotFound");
    const bad = await cli(url, ["schedule", "add", "--platform", "telegram", "--chat", "42", "--every", "5s", "--text", "x", "--json"]);
    expect(JSON.parse(bad.stdout)).toEqual({ ok: false, error: { code: "Invalid", message: expect.stringContaining("at least 1 minute") } });
    const usage = await cli(url, ["schedule", "add", "--chat", "42", "--json"]);
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.stdout).error.code).toBe("Usage");
    // --at without an offset is read in --tz (as the API and /remind read it), never the machine's zone.
    const tokyo = JSON.parse(
      (await cli(url, ["schedule", "add", "--platform", "telegram", "--chat", "42", "--at", "2031-01-05T09:00", "--tz", "Asia/Tokyo", "--text", "x", "--json"]))
        .stdout,
    );
    expect(tokyo).toMatchObject({ schedule: { kind: "once", spec: "2031-01-05T00:00:00.000Z", timezone: "Asia/Tokyo" } });
    const loose = await cli(url, ["schedule", "add", "--platform", "telegram", "--chat", "42", "--at", "January 5, 2031", "--text", "x", "--json"]);
    expect(JSON.parse(loose.stdout).error).toMatchObject({ code: "Invalid", message: expect.stringContaining("ISO 8601") });
    // --bot names the bot where several share a chat: the one that talked there is found, another is not.
    const byBot = await cli(url, ["schedule", "add", "--platform", "telegram", "--chat", "42", "--bot", "777", "--in", "1h", "--text", "x", "--json"]);
    expect(JSON.parse(byBot.stdout)).toMatchObject({ conversation: { botId: "777", chat: "42" } });
    const otherBot = await cli(url, ["schedule", "add", "--platform", "telegram", "--chat", "42", "--bot", "999", "--in", "1h", "--text", "x", "--json"]);
    expect(JSON.parse(otherBot.stdout).error.code).toBe("NotFound");
    expect(JSON.parse((await cli(url, ["schedule", "list", "--all", "--json"])).stdout).jobs).toHaveLength(4);
  });
});
