/**
 * Store faults at `/new` (the rotation's one transaction) and at the
 * reflection's writes (the memories, then the review cursor), through the
 * real grammY adapter against FakeTelegram on a real SQLite file. The
 * promises: `/new` answered once and the conversation rotated once (a
 * StoreError in a command leaves the event unhandled and retried, DESIGN
 * "Runtime"); a failed review is retried by the next one and nothing is
 * lost, and nothing is written twice either: each statement becomes one
 * memory, whether the review's write failed or landed with its
 * acknowledgement lost.
 */
import { afterEach, describe, expect, it } from "vitest";
import { TelegramAdapter } from "../../../adapters/telegram/index.js";
import type { App } from "../../../src/gateway/app.js";
import type { StoreFaults } from "../../../src/store/index.js";
import { FakeTelegram } from "../../fakes/telegram.js";
import { eventually } from "../../support/app.js";
import { startAppOn } from "../../support/app-on.js";
import { freshMigratedSqliteUrl } from "../../support/db.js";
import { FaultPlan } from "../../support/faults.js";

let fake: FakeTelegram | undefined;
const apps: App[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.stop().catch(() => undefined);
  await fake?.close();
  fake = undefined;
});

async function gateway(env: Record<string, string>, faults: StoreFaults): Promise<App> {
  fake = new FakeTelegram();
  await fake.start();
  const adapter = new TelegramAdapter({ token: fake.token, apiRoot: fake.apiRoot, mode: "polling", pollingTimeoutSec: 1, backoff: { baseMs: 20, maxMs: 200 } });
  const { app } = await startAppOn(await freshMigratedSqliteUrl(), [adapter], { REFLECT_EVERY_TURNS: "0", ...env }, { retryIntervalMs: 200, faults });
  apps.push(app);
  return app;
}

describe("/new and reflection against store faults", () => {
  it("a store fault at /new's rotation: /new is answered once, the conversation rotated once, the next message lands in the fresh session", async () => {
    const faults = new FaultPlan();
    const app = await gateway({}, faults);
    const f = fake!;
    const user = f.user("rot");
    const chat = f.privateChat(user);
    const said = () => f.sent({ chatId: chat.id }).map((s) => s.text);
    f.userMessage({ chat, from: user, text: "before" });
    await eventually(said, (t) => t.length >= 1, 20_000, "the first reply");
    faults.once("rotate", "SQLITE_FULL");
    f.userMessage({ chat, from: user, text: "/new" });
    f.userMessage({ chat, from: user, text: "after" });
    await eventually(said, (t) => t.includes("echo: after"), 20_000, "the reply after /new");
    await app.gateway.idle();
    expect(faults.injected.get("rotate")).toBe(1);
    const archived = await app.db.query("probe-sessions", app.db.q.selectFrom("Session").select(["id", "archived", "parentId"]));
    await app.stop({ graceMs: 30_000 });
    apps.length = 0;
    const texts = said();
    expect(
      texts.filter((t) => /fresh session/i.test(t)),
      texts.join("\n"),
    ).toHaveLength(1);
    expect(texts.filter((t) => /command failed/i.test(t))).toEqual([]);
    expect(texts.at(-1)).toBe("echo: after");
    expect(archived.filter((s) => s.archived)).toHaveLength(1);
  });

  for (const how of ["fails", "lands, its acknowledgement lost"] as const) {
    it(`the review's write ${how}: each statement becomes one memory`, async () => {
      let armed = false;
      let injected = 0;
      const fail = (op: string) => {
        // The review's one write (its memories and its cursor); earlier, its cursor was a write of its own (kv-set).
        if (!armed || (op !== "add-memories" && op !== "kv-set")) return;
        armed = false;
        injected++;
        throw Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });
      };
      const faults: StoreFaults = how === "fails" ? { onStatement: fail } : { afterCommit: fail };
      const app = await gateway({ REFLECT_EVERY_TURNS: "1" }, faults);
      const f = fake!;
      const user = f.user("mem");
      const chat = f.privateChat(user);
      const memories = () => app.db.query("probe-memories", app.db.q.selectFrom("Memory").select("content"));
      const say = async (text: string, n: number) => {
        f.userMessage({ chat, from: user, text });
        await eventually(
          () => f.sent({ chatId: chat.id }).length,
          (c) => c >= n,
          20_000,
          `the reply to ${text}`,
        );
        await app.gateway.idle();
      };
      // A first turn, reviewed cleanly: the chat's one-time writes are behind us.
      await say("warm up", 1);
      await eventually(memories, (m) => m.length >= 1, 20_000, "the first review");
      armed = true;
      await say("my name is Zed", 2);
      await eventually(
        () => injected,
        (n) => n === 1,
        20_000,
        "the fault",
      );
      // The next turn's review picks up what the failed one left.
      await say("I live on Mars", 3);
      await eventually(memories, (m) => m.some((x) => x.content.includes("Mars")), 20_000, "the next review");
      const contents = (await memories()).map((m) => m.content);
      await app.stop({ graceMs: 30_000 });
      apps.length = 0;
      const counts = new Map<string, number>();
      for (const c of contents) counts.set(c, (counts.get(c) ?? 0) + 1);
      expect(counts.get("The user said: my name is Zed"), contents.join("\n")).toBe(1);
      expect([...counts].filter(([, n]) => n > 1).map(([c]) => c)).toEqual([]);
    });
  }
});
