import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { forkGateway, snapshotOf, stopChild } from "../../bench/lib/child.js";
import { analyseHeapSnapshot } from "../../bench/lib/heap-snapshot.js";
import { discordDriver } from "../../bench/lib/platforms.js";
import { tempSqliteUrl } from "../support/temp-sqlite.js";

/**
 * What the compiled gateway keeps of the chats it serves, read from its own heap: the
 * build once renamed discord.js's MessageManager class, whose cache limit is looked up by
 * class name, so every Discord message stayed in memory (73 MB after the 10,000-chat
 * memory bench) although the adapter sets that cache to 0.
 */
const ROOT = path.resolve(".");
const run = promisify(execFile);
const made: string[] = [];
let install: string;

beforeAll(async () => {
  install = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-memory-build-"));
  made.push(install);
  // The build warms its code cache by running the bundle, which resolves better-sqlite3 from beside it.
  fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(install, "node_modules"));
  await run(process.execPath, [path.join(ROOT, "scripts/build.mjs"), `--out-dir=${path.join(install, "dist")}`]);
}, 180_000);

afterAll(() => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});

describe("the compiled gateway's heap", () => {
  it("keeps none of the Discord messages it answered", async () => {
    const discord = discordDriver(20);
    await discord.start();
    const env = {
      DATABASE_URL: tempSqliteUrl("switchboard-memory-test-", "test.db", made),
      LOG_LEVEL: "silent",
      DM_POLICY: "open",
      GROUP_REQUIRE_MENTION: "false",
      ...discord.env(),
    };
    const { child } = await forkGateway(env, { compiled: true, dist: path.join(install, "dist") });
    try {
      const messages = 120;
      for (let i = 0; i < messages; i++) discord.say(i, `m ${i}`);
      await discord.waitFor(() => discord.replies().length >= messages, 60_000);
      const file = path.join(install, "gateway.heapsnapshot");
      await snapshotOf(child, file);
      const heap = analyseHeapSnapshot(file, 5, ["Message", "DMChannel"]);
      // The channels are cached (a reply is sent to one); their messages are not.
      expect(heap.explained!.DMChannel!.count).toBeGreaterThan(0);
      expect(heap.explained!.Message!.count).toBe(0);
    } finally {
      await stopChild(child);
      await discord.close();
    }
  }, 240_000);
});
