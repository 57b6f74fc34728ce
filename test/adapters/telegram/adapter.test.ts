/**
 * Adapter lifecycle beyond inbound and outbound: the command menu
 * (setMyCommands once per change, remembered in kv), getMe failures,
 * limits, configuration, and that the token never reaches a log line.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { commandsHash, commandsKey, telegramCommandList } from "../../../adapters/telegram/commands.js";
import { telegramAdapterFromConfig, TelegramAdapter } from "../../../adapters/telegram/index.js";
import { AdapterError, type Adapter } from "../../../adapters/types.js";
import type { Config } from "../../../src/config.js";
import { FakeTelegram } from "../../fakes/telegram.js";
import { makeContext, newAdapter } from "./helpers.js";

let tg: FakeTelegram;
let adapters: TelegramAdapter[] = [];

beforeEach(async () => {
  tg = new FakeTelegram();
  await tg.start();
});

afterEach(async () => {
  for (const a of adapters) await a.stop();
  adapters = [];
  await tg.close();
});

function adapter(extra: Parameters<typeof newAdapter>[1] = {}): TelegramAdapter {
  const a = newAdapter(tg, extra);
  adapters.push(a);
  return a;
}

async function startAndStop(ctx: ReturnType<typeof makeContext>): Promise<TelegramAdapter> {
  const a = adapter();
  await a.start(ctx);
  await a.stop();
  return a;
}

describe("TelegramAdapter commands", () => {
  it("registers commands once, not again when unchanged (kv remembers), again when the list changes", async () => {
    const store = new Map<string, string>();
    const commands = [
      { name: "new", description: "Start a fresh session" },
      { name: "stop", description: "Stop the current reply" },
    ];
    await startAndStop(makeContext({ store, commands }));
    expect(tg.callsTo("setMyCommands")).toHaveLength(1);
    expect(tg.commands()).toEqual([
      { command: "new", description: "Start a fresh session" },
      { command: "stop", description: "Stop the current reply" },
    ]);
    const key = commandsKey(String(tg.botUser.id));
    expect(key).toBe(`telegram:${tg.botUser.id}:commands`);
    expect(store.get(key)).toBe(commandsHash(telegramCommandList(commands)));

    await startAndStop(makeContext({ store, commands: [...commands] }));
    expect(tg.callsTo("setMyCommands")).toHaveLength(1);

    const changed = [...commands, { name: "status", description: "Show the session" }];
    await startAndStop(makeContext({ store, commands: changed }));
    expect(tg.callsTo("setMyCommands")).toHaveLength(2);
    expect(tg.commands().map((c) => c.command)).toEqual(["new", "stop", "status"]);
  });

  it("a 500 from setMyCommands is logged and start() continues; the next start tries again", async () => {
    const store = new Map<string, string>();
    tg.failNext("setMyCommands", { status: 500 });
    const ctx = makeContext({ store });
    const a = adapter();
    await a.start(ctx);
    expect(a.health().ready).toBe(true);
    expect(store.size).toBe(0);
    expect(ctx.logLines.join("")).toMatch(/setMyCommands failed/);
    await a.stop();
    await startAndStop(makeContext({ store }));
    expect(tg.callsTo("setMyCommands").map((c) => c.status)).toEqual([500, 200]);
    expect(store.size).toBe(1);
  });

  it("command names are made acceptable to Telegram; invalid ones are left out", () => {
    const list = telegramCommandList([
      { name: "/Help", description: "Help" },
      { name: "bad-name", description: "x" },
      { name: "help", description: "duplicate" },
      { name: "empty", description: "  " },
      { name: "long", description: "d".repeat(300) },
    ]);
    expect(list.map((c) => c.command)).toEqual(["help", "empty", "long"]);
    expect(list[1]!.description).toBe("empty");
    expect(list[2]!.description).toHaveLength(256);
  });
});

describe("TelegramAdapter lifecycle", () => {
  it("declares Telegram's limits", () => {
    const a: Adapter = adapter();
    expect(a.platform).toBe("telegram");
    expect(a.limits).toEqual({
      maxTextLength: 4096,
      editIntervalMs: { private: 1000, group: 3000 },
      perChat: { ratePerSec: 1, burst: 3 },
      // At most 28 sends in any 1 s window: under Telegram's 30 with a margin (limits.ts).
      global: { ratePerSec: 20, burst: 1 },
      canEdit: true,
    });
  });

  it("a token Telegram refuses fails start() with the fix, and the token is in no message or log", async () => {
    const token = "123456789:WRONG-token-value_abcdefghij";
    const a = adapter({ token });
    const ctx = makeContext();
    const err = await a.start(ctx).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AdapterError);
    expect((err as AdapterError).code).toBe("Rejected");
    expect((err as AdapterError).message).toMatch(/TELEGRAM_BOT_TOKEN/);
    expect((err as AdapterError).message).not.toContain(token);
    expect(ctx.logLines.join("")).not.toContain(token);
    expect(a.health()).toEqual({ ready: false, detail: "not started" });
  });

  it("getMe is retried on a transient failure, then start() succeeds", async () => {
    tg.failNext("getMe", { status: 502 }, 2);
    const a = adapter();
    await a.start(makeContext());
    expect(tg.callsTo("getMe")).toHaveLength(3);
    expect(a.health().ready).toBe(true);
  });

  it("getMe down for good: start() fails as Unavailable", async () => {
    tg.failNext("getMe", { status: 500 }, 10);
    const err = await adapter()
      .start(makeContext())
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AdapterError);
    expect((err as AdapterError).code).toBe("Unavailable");
  });

  it("without the usual token shape the bot id comes from getMe", async () => {
    const odd = new FakeTelegram({ token: "odd-token-without-id" });
    await odd.start();
    try {
      const a = new TelegramAdapter({ token: odd.token, apiRoot: odd.apiRoot, pollingTimeoutSec: 1 });
      adapters.push(a);
      expect(a.botId).toBe("");
      await expect(a.sink.typing({ platform: "telegram", botId: "1", chatId: "1" })).rejects.toMatchObject({ code: "Unavailable" });
      await a.start(makeContext());
      expect(a.botId).toBe(String(odd.botUser.id));
      await a.stop();
    } finally {
      await odd.close();
    }
  });

  it("constructor errors teach the fix", () => {
    expect(() => new TelegramAdapter({ token: " " })).toThrow(/TELEGRAM_BOT_TOKEN/);
    expect(() => new TelegramAdapter({ token: tg.token, apiRoot: `${tg.apiRoot}/` })).toThrow(/trailing slash/);
  });
});

describe("telegramAdapterFromConfig", () => {
  it("returns undefined without a token, an adapter with one", () => {
    expect(telegramAdapterFromConfig({})).toBeUndefined();
    expect(telegramAdapterFromConfig({ TELEGRAM_BOT_TOKEN: "  " })).toBeUndefined();
    const a = telegramAdapterFromConfig({ TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_API_ROOT: tg.apiRoot, TELEGRAM_MODE: "polling" });
    expect(a).toBeInstanceOf(TelegramAdapter);
    expect(a!.botId).toBe(String(tg.botUser.id));
    expect(() => telegramAdapterFromConfig({ TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_MODE: "webhook" })).toThrow(/TELEGRAM_WEBHOOK_SECRET/);
    const w = telegramAdapterFromConfig({
      TELEGRAM_BOT_TOKEN: tg.token,
      TELEGRAM_MODE: "webhook",
      TELEGRAM_WEBHOOK_SECRET: "abc",
      TELEGRAM_WEBHOOK_URL: "https://example.com/telegram/1",
    });
    expect(w).toBeInstanceOf(TelegramAdapter);
  });

  it("accepts the gateway's Config type as it is", () => {
    // Compile-time check: src/config.ts's Config fits the helper's parameter.
    const fromConfig = (c: Config) => telegramAdapterFromConfig(c);
    expect(typeof fromConfig).toBe("function");
  });
});
