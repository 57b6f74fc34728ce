/**
 * The turn's commit lands but its acknowledgement is lost (StoreError
 * CommitUnknown): the retry finds the inbound record handled and writes
 * nothing ("duplicate", DESIGN "Durability": the turn's commit is
 * idempotent). Through the real grammY adapter against FakeTelegram on a
 * real SQLite file. The promises: the answer reaches the chat exactly once,
 * and nothing of the exchange is lost to the conversation: the next turn's
 * window holds it, as it would had the acknowledgement arrived.
 */
import { afterEach, describe, expect, it } from "vitest";
import { TelegramAdapter } from "../../../adapters/telegram/index.js";
import type { Agent } from "../../../src/agent/types.js";
import type { App } from "../../../src/gateway/app.js";
import { FakeTelegram } from "../../fakes/telegram.js";
import { eventually } from "../../support/app.js";
import { LostAck } from "../../support/faults.js";
import { startAppOn } from "../../support/app-on.js";
import { freshMigratedSqliteUrl } from "../../support/db.js";

let fake: FakeTelegram | undefined;
const apps: App[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.stop().catch(() => undefined);
  await fake?.close();
  fake = undefined;
});

describe("the turn's commit lands, its acknowledgement is lost", () => {
  it("the answer is sent once, and the next turn's window holds the exchange", async () => {
    fake = new FakeTelegram();
    await fake.start();
    const faults = new LostAck("commit-turn", { armed: false });
    const windows: string[][] = [];
    const agentFactory = (): Agent => ({
      name: "recorder",
      async *run(req) {
        windows.push(req.messages.map((m) => `${m.role}: ${typeof m.content === "string" ? m.content : JSON.stringify(m.content)}`));
        const last = [...req.messages].reverse().find((m) => m.role === "user")?.content ?? "";
        yield { type: "done", text: `echo: ${String(last)}`, toolRounds: 0 };
      },
    });
    const adapter = new TelegramAdapter({ token: fake.token, apiRoot: fake.apiRoot, mode: "polling", pollingTimeoutSec: 1 });
    const { app } = await startAppOn(
      await freshMigratedSqliteUrl(),
      [adapter],
      { REFLECT_EVERY_TURNS: "0" },
      { retryIntervalMs: 200, faults, agentFactory: agentFactory as never },
    );
    apps.push(app);
    const user = fake.user("ctx");
    const chat = fake.privateChat(user);
    const say = async (text: string, n: number) => {
      fake!.userMessage({ chat, from: user, text });
      await eventually(
        () => fake!.sent({ chatId: chat.id }).length,
        (c) => c >= n,
        30_000,
        `the reply to ${text}`,
      );
      await app.gateway.idle();
    };
    await say("hello", 1);
    faults.arm();
    await say("my name is Zed", 2);
    expect(faults.armed).toBe(false);
    await say("what is my name?", 3);
    await app.stop({ graceMs: 30_000 });
    apps.length = 0;
    expect(fake.sent({ chatId: chat.id }).map((s) => s.text)).toEqual(["echo: hello", "echo: my name is Zed", "echo: what is my name?"]);
    // The third turn's window: the whole conversation so far, the exchange whose acknowledgement was lost included.
    expect(windows.at(-1)).toEqual([
      "user: hello",
      "assistant: echo: hello",
      "user: my name is Zed",
      "assistant: echo: my name is Zed",
      "user: what is my name?",
    ]);
  }, 60_000);
});
