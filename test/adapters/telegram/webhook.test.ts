/**
 * Webhook mode: the adapter mounts POST /telegram/<botId> through ctx.route;
 * a RouteBridge serves it over HTTP so FakeTelegram calls it the way
 * Telegram would (setWebhook, then one POST per update with the secret).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { TelegramAdapter } from "../../../adapters/telegram/index.js";
import { secretMatches, SECRET_HEADER } from "../../../adapters/telegram/webhook.js";
import type { HttpHandler } from "../../../adapters/types.js";
import { FakeTelegram, type TgChat, type TgUser } from "../../fakes/telegram.js";
import { httpRequest, makeContext, newAdapter, RouteBridge, until, type TestContext } from "./helpers.js";

const SECRET = "s3cret_Value-123";

let tg: FakeTelegram;
let bridge: RouteBridge | undefined;
let adapter: TelegramAdapter | undefined;
let alice: TgUser;
let dm: TgChat;

beforeEach(async () => {
  tg = new FakeTelegram();
  await tg.start();
  alice = tg.user("Alice");
  dm = tg.privateChat(alice);
});

afterEach(async () => {
  await adapter?.stop();
  adapter = undefined;
  await bridge?.close();
  bridge = undefined;
  await tg.close();
});

/** Starts a webhook-mode adapter behind a bridge; returns the context and the public webhook URL. */
async function startWebhook(ctx: TestContext = makeContext(), withUrl = true): Promise<{ ctx: TestContext; url: string }> {
  bridge = new RouteBridge(ctx.routes);
  const base = await bridge.start();
  const url = `${base}/telegram/${tg.botUser.id}`;
  adapter = newAdapter(tg, { mode: "webhook", webhookSecret: SECRET, ...(withUrl && { webhookUrl: url }) });
  await adapter.start(ctx);
  return { ctx, url };
}

function handlerOf(ctx: TestContext): HttpHandler {
  const h = ctx.routes.get(`POST /telegram/${tg.botUser.id}`);
  if (!h) throw new Error(`no route; mounted: ${[...ctx.routes.keys()].join(", ")}`);
  return h;
}

describe("TelegramAdapter webhook", () => {
  it("mounts POST /telegram/<botId> and calls setWebhook with the secret; no getUpdates, no deleteWebhook", async () => {
    const { ctx, url } = await startWebhook();
    expect([...ctx.routes.keys()]).toEqual([`POST /telegram/${tg.botUser.id}`]);
    expect(tg.webhook).toMatchObject({ url, secret_token: SECRET, allowed_updates: ["message", "edited_message", "callback_query"] });
    expect(tg.callsTo("getUpdates")).toHaveLength(0);
    expect(tg.callsTo("deleteWebhook")).toHaveLength(0);
    expect(adapter!.health()).toEqual({ ready: true });
  });

  it("without TELEGRAM_WEBHOOK_URL the route is mounted and setWebhook is left alone", async () => {
    const { ctx } = await startWebhook(makeContext(), false);
    expect(ctx.routes.size).toBe(1);
    expect(tg.callsTo("setWebhook")).toHaveLength(0);
  });

  it("correct secret: the update is recorded, then 200", async () => {
    const { ctx } = await startWebhook();
    tg.userMessage({ chat: dm, from: alice, text: "via webhook" });
    await tg.waitFor(() => tg.webhookDeliveries().length === 1);
    expect(tg.webhookDeliveries()[0]!.status).toBe(200);
    expect(ctx.recorded.map((e) => e.text)).toEqual(["via webhook"]);
  });

  it("wrong or missing secret: 401 and nothing reaches inbound", async () => {
    const { ctx, url } = await startWebhook();
    const update = tg.build.message({ chat: dm, from: alice, text: "forged" });
    expect((await tg.deliverWebhook(url, update, "wrong")).status).toBe(401);
    expect((await tg.deliverWebhook(url, update)).status).toBe(401);
    expect((await tg.deliverWebhook(url, update, `${SECRET}x`)).status).toBe(401);
    expect((await tg.deliverWebhook(url, update, "")).status).toBe(401);
    // A repeated header is refused rather than guessed at.
    const twice = await handlerOf(ctx)(httpRequest("POST", "/x", { [SECRET_HEADER]: [SECRET, SECRET] }, Buffer.from(JSON.stringify(update))));
    expect(twice.status).toBe(401);
    expect(ctx.calls).toHaveLength(0);
    expect(ctx.logLines.join("")).not.toContain(SECRET);
  });

  it("the same update delivered twice reaches inbound twice: dropping duplicates is the gateway's job", async () => {
    const { ctx, url } = await startWebhook();
    const update = tg.build.message({ chat: dm, from: alice, text: "again" });
    expect((await tg.deliverWebhook(url, update, SECRET)).status).toBe(200);
    expect((await tg.deliverWebhook(url, update, SECRET)).status).toBe(200);
    expect(ctx.calls).toHaveLength(2);
    expect(ctx.calls[0]!.eventId).toBe(ctx.calls[1]!.eventId);
  });

  it("malformed JSON or a non-object body is 400 (after the secret check); unknown types are 200 without inbound, an edit is a change", async () => {
    const { ctx } = await startWebhook();
    const h = handlerOf(ctx);
    const post = (body: string, secret: string | undefined = SECRET) =>
      h(httpRequest("POST", `/telegram/${tg.botUser.id}`, secret === undefined ? {} : { [SECRET_HEADER]: secret }, Buffer.from(body)));
    expect((await post("{not json")).status).toBe(400);
    expect((await post("[1,2]")).status).toBe(400);
    expect((await post("null")).status).toBe(400);
    expect((await post("{not json", "wrong")).status).toBe(401);
    const m = tg.build.message({ chat: dm, from: alice, text: "v1" }).message!;
    expect((await post(JSON.stringify(tg.build.edit(m, "v2")))).status).toBe(200);
    expect((await post(JSON.stringify({ update_id: 9, brand_new_type: {} }))).status).toBe(200);
    expect(ctx.calls.map((e) => [e.text, e.change?.kind])).toEqual([["v2", "edit"]]);
  });

  it("a failure to record answers 500, so Telegram redelivers; after stop the route answers 503", async () => {
    const { ctx, url } = await startWebhook(makeContext({ failFirst: 1 }));
    const update = tg.build.message({ chat: dm, from: alice, text: "retry me" });
    expect((await tg.deliverWebhook(url, update, SECRET)).status).toBe(500);
    expect((await tg.deliverWebhook(url, update, SECRET)).status).toBe(200);
    expect(ctx.recorded.map((e) => e.text)).toEqual(["retry me"]);
    await adapter!.stop();
    expect((await tg.deliverWebhook(url, update, SECRET)).status).toBe(503);
    expect(ctx.calls).toHaveLength(2);
  });

  it("setWebhook refused: start fails and says what to check", async () => {
    tg.failNext("setWebhook", { status: 400, description: "Bad Request: bad webhook: HTTPS url must be provided for webhook" });
    const ctx = makeContext();
    bridge = new RouteBridge(ctx.routes);
    const base = await bridge.start();
    adapter = newAdapter(tg, { mode: "webhook", webhookSecret: SECRET, webhookUrl: `${base}/telegram/${tg.botUser.id}` });
    await expect(adapter.start(ctx)).rejects.toThrow(/could not set its webhook.*TELEGRAM_WEBHOOK_URL/);
    expect(adapter.health().ready).toBe(false);
  });

  it("webhook mode needs a valid secret", () => {
    expect(() => newAdapter(tg, { mode: "webhook" })).toThrow(/TELEGRAM_WEBHOOK_SECRET/);
    expect(() => newAdapter(tg, { mode: "webhook", webhookSecret: "has space" })).toThrow(/A-Z, a-z, 0-9, _ and -/);
  });

  it("secretMatches is exact", () => {
    expect(secretMatches(SECRET, SECRET)).toBe(true);
    expect(secretMatches(SECRET.slice(0, -1), SECRET)).toBe(false);
    expect(secretMatches("", SECRET)).toBe(false);
    expect(secretMatches(SECRET.toUpperCase(), SECRET)).toBe(false);
  });

  it("polling updates queued before setWebhook are handed to the webhook", async () => {
    tg.userMessage({ chat: dm, from: alice, text: "queued earlier" });
    const { ctx } = await startWebhook();
    await until(() => ctx.recorded.length === 1, 3000, "queued update delivered");
    expect(ctx.recorded[0]!.text).toBe("queued earlier");
  });
});
