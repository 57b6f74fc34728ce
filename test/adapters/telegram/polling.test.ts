/**
 * Long polling against FakeTelegram's real getUpdates (offsets, long poll):
 * updates reach inbound in order, an update is confirmed only after inbound
 * resolved for it, a failing inbound is retried without skipping, and what
 * was not confirmed is handed out again after a restart.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { TelegramAdapter } from "../../../adapters/telegram/index.js";
import type { InboundEnvelope } from "../../../adapters/types.js";
import { FakeTelegram, type TgChat, type TgUpdate, type TgUser } from "../../fakes/telegram.js";
import { eventIdOfUpdate, makeContext, newAdapter, until } from "./helpers.js";

let tg: FakeTelegram;
let adapters: TelegramAdapter[] = [];
let alice: TgUser;
let dm: TgChat;

beforeEach(async () => {
  tg = new FakeTelegram();
  await tg.start();
  alice = tg.user("Alice");
  dm = tg.privateChat(alice);
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

const texts = (envs: InboundEnvelope[]): string[] => envs.map((e) => e.text);
const pendingIds = (): Set<number> => new Set(tg.pending().map((u) => u.update_id));
const never = new Promise<void>(() => undefined);

describe("TelegramAdapter long polling", () => {
  it("starts with getMe, deleteWebhook (keeping pending updates) and reports ready", async () => {
    const a = adapter();
    expect(a.health()).toEqual({ ready: false, detail: "not started" });
    await a.start(makeContext());
    expect(a.botId).toBe(String(tg.botUser.id));
    expect(a.botUsername).toBe(tg.botUser.username);
    expect(tg.callsTo("deleteWebhook")[0]!.params.drop_pending_updates).toBe(false);
    await tg.waitFor(() => tg.callsTo("getUpdates").length > 0);
    expect(tg.callsTo("getUpdates")[0]!.params).toMatchObject({ timeout: 2, allowed_updates: ["message", "edited_message", "callback_query"] });
    expect(a.health()).toEqual({ ready: true });
    await a.stop();
    expect(a.health()).toEqual({ ready: false, detail: "stopped" });
  });

  it("delivers updates in order and confirms each only after inbound resolved for it", async () => {
    const sent = ["one", "two", "three", "four", "five"].map((text) => tg.userMessage({ chat: dm, from: alice, text }));
    const updateOf = new Map(sent.map((u) => [eventIdOfUpdate(u), u.update_id]));
    const violations: string[] = [];
    const ctx = makeContext({
      onInbound: async (env) => {
        const id = updateOf.get(env.eventId)!;
        if (!pendingIds().has(id)) violations.push(`${id} confirmed before inbound was called`);
        await new Promise((r) => setTimeout(r, 5));
        if (!pendingIds().has(id)) violations.push(`${id} confirmed while inbound was running`);
      },
    });
    await adapter().start(ctx);
    await until(() => ctx.recorded.length === 5 && tg.pending().length === 0, 3000, "5 updates recorded and confirmed");
    expect(texts(ctx.recorded)).toEqual(["one", "two", "three", "four", "five"]);
    expect(violations).toEqual([]);
  });

  it("retries a failing inbound on the same update, never skipping it", async () => {
    for (const text of ["one", "two", "three"]) tg.userMessage({ chat: dm, from: alice, text });
    const ctx = makeContext({ failFirst: 3 });
    const a = adapter();
    await a.start(ctx);
    await until(() => ctx.recorded.length === 3, 3000, "3 updates recorded");
    expect(texts(ctx.calls)).toEqual(["one", "one", "one", "one", "two", "three"]);
    expect(texts(ctx.recorded)).toEqual(["one", "two", "three"]);
    expect(a.health()).toEqual({ ready: true });
  });

  it("reports a stuck update in health while inbound keeps failing", async () => {
    tg.userMessage({ chat: dm, from: alice, text: "one" });
    const ctx = makeContext({ failFirst: 1_000_000 });
    const a = adapter();
    await a.start(ctx);
    await until(() => ctx.calls.length >= 3, 3000, "3 attempts");
    expect(a.health().ready).toBe(true);
    expect(a.health().detail).toMatch(/could not be recorded after \d+ attempts/);
    expect(tg.pending()).toHaveLength(1);
  });

  it("an update whose inbound hangs or fails stays unconfirmed across a restart; confirmed ones are not redelivered", async () => {
    for (const text of ["one", "two", "three", "four"]) tg.userMessage({ chat: dm, from: alice, text });
    const first = makeContext({ onInbound: (env) => (env.text === "three" ? never : undefined) });
    const a = adapter({ pollingTimeoutSec: 30 });
    await a.start(first);
    await until(() => first.calls.some((e) => e.text === "three"), 3000, "inbound called for 'three'");
    const t0 = Date.now();
    await a.stop();
    // A hung store must not hold up shutdown, nor the 30 s long poll.
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(texts(first.recorded)).toEqual(["one", "two"]);
    expect(texts(first.calls)).toEqual(["one", "two", "three"]);
    expect(tg.pending().map((u) => u.message?.text)).toEqual(["three", "four"]);

    const second = makeContext();
    await adapter().start(second);
    await until(() => second.recorded.length === 2 && tg.pending().length === 0, 3000, "the rest recorded");
    expect(texts(second.calls)).toEqual(["three", "four"]);
  });

  it("a restart halfway through a burst of 500: every update reaches inbound, none is confirmed before inbound resolved", async () => {
    const chats = [dm, tg.group("G", -4100), tg.supergroup("S", { id: -1004100 }), tg.privateChat(tg.user("Bob"))];
    const burst: TgUpdate[] = [];
    for (let i = 0; i < 500; i++) burst.push(tg.userMessage({ chat: chats[i % chats.length]!, from: alice, text: `m${i}` }));
    const updateOf = new Map(burst.map((u) => [eventIdOfUpdate(u), u.update_id]));
    const seen = new Map<string, number>();
    const firstSeenOrder: number[] = [];
    const chatOfUpdate = new Map(burst.map((u) => [u.update_id, (u as { message?: { chat: { id: number } } }).message!.chat.id]));
    const violations: string[] = [];
    const onInbound = async (env: InboundEnvelope, i: number): Promise<void> => {
      const id = updateOf.get(env.eventId)!;
      if (!seen.has(env.eventId)) firstSeenOrder.push(id);
      seen.set(env.eventId, (seen.get(env.eventId) ?? 0) + 1);
      if (!pendingIds().has(id)) violations.push(`${id} was confirmed before inbound resolved`);
      // Let the event loop run (and any premature getUpdates arrive) before resolving.
      await new Promise((r) => (i % 20 === 0 ? setTimeout(r, 10) : setImmediate(r)));
      if (!pendingIds().has(id)) violations.push(`${id} was confirmed before inbound resolved`);
    };

    const first = makeContext({ onInbound });
    const a = adapter();
    await a.start(first);
    await until(() => seen.size >= 250, 5000, "half of the burst");
    await a.stop();
    const afterFirst = seen.size;
    expect(afterFirst).toBeLessThan(500);

    const second = makeContext({ onInbound });
    await adapter().start(second);
    await until(() => seen.size === 500 && tg.pending().length === 0, 10_000, "the whole burst recorded and confirmed");

    expect(violations).toEqual([]);
    expect([...updateOf.keys()].every((k) => (seen.get(k) ?? 0) >= 1)).toBe(true);
    // Each chat's order holds across the restart (chats are recorded side by side).
    for (const chat of chats) {
      const inChat = firstSeenOrder.filter((id) => chatOfUpdate.get(id) === chat.id);
      expect(inChat).toEqual([...inChat].sort((x, y) => x - y));
    }
    // A clean stop confirms the recorded prefix of the batch: what other chats recorded past it is delivered again after the
    // restart (at most one batch of 100), and the gateway drops those as duplicates by their event id.
    const duplicates = [...seen.values()].reduce((n, c) => n + c - 1, 0);
    expect(duplicates).toBeLessThanOrEqual(100);
  });

  it("unknown update types are confirmed without reaching inbound; an edit reaches it as a change", async () => {
    const m = tg.userMessage({ chat: dm, from: alice, text: "v1" });
    tg.editMessage(m.message!, "v2");
    tg.inject({ poll: { id: "p1", question: "?", options: [] } });
    tg.inject({ some_future_update: { whatever: true } });
    tg.inject({ channel_post: { message_id: 1, chat: { id: -1005, type: "channel", title: "News" }, date: 1, text: "post" } });
    tg.userMessage({ chat: dm, from: alice, text: "after" });
    const ctx = makeContext();
    await adapter({ allowedUpdates: ["message", "edited_message", "channel_post", "poll", "some_future_update"] }).start(ctx);
    await until(() => ctx.recorded.length === 3 && tg.pending().length === 0, 3000, "all confirmed");
    expect(texts(ctx.calls)).toEqual(["v1", "v2", "after"]);
    expect(ctx.calls.map((e) => e.change?.kind)).toEqual([undefined, "edit", undefined]);
  });

  it("health goes not-ready while getUpdates keeps failing, and recovers", async () => {
    tg.failNext("getUpdates", { status: 502, description: "Bad Gateway" }, 4);
    const a = adapter({ backoff: { baseMs: 150, maxMs: 300 } });
    const ctx = makeContext();
    await a.start(ctx);
    await until(() => a.health().ready === false, 3000, "not ready");
    expect(a.health().detail).toMatch(/getUpdates failed \d+ times in a row: .*502/);
    await until(() => a.health().ready === true, 3000, "ready again");
    tg.userMessage({ chat: dm, from: alice, text: "back" });
    await until(() => ctx.recorded.length === 1, 3000, "delivered after recovery");
    expect(ctx.logLines.join("")).not.toContain(tg.token);
  });

  it("a conflict (another poller or a webhook) explains itself in health", async () => {
    tg.failNext("getUpdates", { status: 409, description: "Conflict: terminated by other getUpdates request" }, 5);
    const a = adapter({ backoff: { baseMs: 150, maxMs: 300 } });
    await a.start(makeContext());
    await until(() => a.health().ready === false, 3000, "not ready");
    expect(a.health().detail).toMatch(/Another process is polling with this bot token/);
  });

  it("stop() is prompt during an idle long poll and the adapter can start again", async () => {
    const a = adapter({ pollingTimeoutSec: 30 });
    const ctx = makeContext();
    await a.start(ctx);
    await tg.waitFor(() => tg.callsTo("getUpdates").length > 0);
    const t0 = Date.now();
    await a.stop();
    expect(Date.now() - t0).toBeLessThan(5000); // not the 30 s long poll
    tg.userMessage({ chat: dm, from: alice, text: "while stopped" });
    await a.start(makeContext());
    expect(a.health().ready).toBe(true);
    await until(() => tg.pending().length === 0, 3000, "delivered after restart");
    await expect(a.start(ctx)).rejects.toThrow(/already started/);
  });
});

describe("TelegramAdapter long polling, a batch across many chats", () => {
  it("records 30 chats of one batch at once without piling abort listeners on the poller's signal", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => void warnings.push(`${w.name}: ${w.message}`);
    process.on("warning", onWarning);
    try {
      for (let i = 0; i < 30; i++) {
        const from = tg.user(`user${i}`);
        tg.userMessage({ chat: tg.privateChat(from), from, text: `hello ${i}` });
      }
      // Every chat's record waits until all 30 are in flight: they are recorded concurrently.
      let release!: () => void;
      const allIn = new Promise<void>((r) => (release = r));
      const ctx = makeContext({
        onInbound: async (_env, i) => {
          if (i === 29) release();
          await allIn;
        },
      });
      const a = adapter();
      await a.start(ctx);
      await until(() => ctx.recorded.length === 30, 20_000);
      // Node reports the warning on the next tick of its own: give it a turn of the event loop.
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.includes("MaxListenersExceededWarning"))).toEqual([]);
      expect(new Set(texts(ctx.recorded)).size).toBe(30);
    } finally {
      process.off("warning", onWarning);
    }
  });
});
