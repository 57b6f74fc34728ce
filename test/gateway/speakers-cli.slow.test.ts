/**
 * `switchboard sessions show` (a real CLI process) names each group message's
 * speaker, in text and in JSON. The console API's view of the same is in
 * speakers-and-limits.test.ts.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { eventually, startApp } from "../support/app.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { prisma } from "../support/prisma.js";

const run = promisify(execFile);

describe("who is speaking, from the CLI", () => {
  it("`switchboard sessions show` names each group message's speaker", async () => {
    const a = new MemoryAdapter();
    const { app, config } = await startApp("sqlite", [a]);
    let sessionId: string;
    try {
      await a.ctx.inbound(a.group("-50", "11", "hello from alice", { senderName: "Alice", mentioned: true }));
      await a.ctx.inbound(a.group("-50", "22", "and bob here", { senderName: "Bob", mentioned: false }));
      await eventually(
        async () => prisma(app.db).read((db) => db.message.count()),
        (n) => n === 3,
        10_000,
        "both entries and the reply",
      );
      sessionId = (await app.registry.listAll())[0]!.id;
    } finally {
      await app.stop();
    }
    const env = { ...process.env, DATABASE_URL: config.DATABASE_URL, LOG_LEVEL: "silent" };
    const bin = path.resolve("bin/switchboard.mjs");
    const cli = await run(process.execPath, [bin, "sessions", "show", sessionId], { env });
    expect(cli.stdout).toMatch(/#\d+ user \[Alice\]: hello from alice/);
    expect(cli.stdout).toMatch(/#\d+ user \[Bob\]: and bob here/);
    expect(cli.stdout).toMatch(/#\d+ assistant: echo: hello from alice/);
    const json = JSON.parse((await run(process.execPath, [bin, "sessions", "show", sessionId, "--json"], { env })).stdout);
    expect(json.result?.messages ?? json.messages).toEqual(
      expect.arrayContaining([expect.objectContaining({ role: "user", speaker: "Bob", content: "and bob here" })]),
    );
  }, 60_000);
});
