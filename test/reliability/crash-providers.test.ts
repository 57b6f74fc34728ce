import type { ChildProcess } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { freshDatabaseUrl } from "../support/db.js";
import { startGateway } from "../support/gateway-processes.js";
import { LoopbackPlatform } from "../support/loopback-platform.js";

async function until(pred: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * kill -9 the gateway while replies are in flight, restart it, and count:
 * every message gets exactly one reply, none is lost, none arrives after its TTL.
 * The one crash run on both providers (SQLite and PostgreSQL), over the loopback
 * platform; crash.test.ts is the 20 runs of the real `switchboard serve` on SQLite
 * against the Telegram and Slack fakes.
 */
describe("a crash is survived", () => {
  let platform: LoopbackPlatform | undefined;
  let child: ChildProcess | undefined;
  afterEach(async () => {
    child?.kill("SIGKILL");
    await platform?.close();
  });

  it.each(["sqlite", "postgresql"] as const)(
    "kill -9 mid-traffic, restart: 0 lost, 0 duplicate, 0 late replies (%s)",
    async (provider) => {
      platform = new LoopbackPlatform();
      const url = await platform.start();
      const env = {
        DATABASE_URL: await freshDatabaseUrl(provider),
        HTTP_PORT: "0",
        DM_POLICY: "open",
        LOOPBACK_URL: url,
        INBOUND_TTL: "10m",
        LOG_LEVEL: "warn",
      };
      child = (await startGateway(env)).child;
      const CHATS = 40;
      const PER_CHAT = 15;
      const total = CHATS * PER_CHAT;
      for (let i = 0; i < PER_CHAT; i++) for (let c = 0; c < CHATS; c++) platform.inject(`c${c}`, `u${c}`, `msg ${c}-${i}`);
      const killAt = Math.floor(total * (0.2 + Math.random() * 0.5));
      await until(() => platform!.messages.length >= killAt, 60_000, `${killAt} replies before the kill`);
      child.kill("SIGKILL");
      await new Promise((r) => child!.once("exit", r));
      const atKill = platform.messages.length;
      child = (await startGateway(env)).child;
      await until(() => new Set(platform!.messages.map((m) => m.text)).size >= total, 120_000, "every message answered after the restart");
      // Anything late or doubled is sent before the gateway has stopped: stop it and wait for its exit.
      const exited = new Promise((r) => child!.once("exit", r));
      child.kill("SIGTERM");
      await exited;

      const perMessage = new Map<string, number>();
      for (const m of platform.messages) perMessage.set(m.text, (perMessage.get(m.text) ?? 0) + 1);
      const expected = platform.updates.map((u) => `echo: ${u.text}`);
      const missing = expected.filter((t) => !perMessage.has(t)).length;
      const duplicates = [...perMessage.values()].filter((n) => n > 1).length;
      const updateAt = new Map(platform.updates.map((u) => [`echo: ${u.text}`, u.date]));
      const late = platform.messages.filter((m) => m.at - (updateAt.get(m.text) ?? m.at) > 10 * 60_000).length;
      const counts = { provider, messages: total, repliesBeforeKill: atKill, missing, duplicates, late, resendsAbsorbedByNonce: platform.dedupedResends };
      console.log(`crash test: ${JSON.stringify(counts)}`);
      expect({ missing, duplicates, late }).toEqual({ missing: 0, duplicates: 0, late: 0 });
      // Per-chat order survives the crash too.
      for (let c = 0; c < CHATS; c++) {
        const seq = platform.messages.filter((m) => m.chatId === `c${c}`).map((m) => Number(/-(\d+)$/.exec(m.text)![1]));
        expect(seq).toEqual([...seq].sort((a, b) => a - b));
      }
    },
    240_000,
  );
});
