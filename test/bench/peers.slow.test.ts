/**
 * The bench's peer bots (bench/peers/*-bot.mjs), each in its own process on
 * the real Telegram fake by webhook, as the peers scenario runs them: they
 * answer `echo: <text>` in a private chat and in a group without a mention,
 * and refuse an update that does not carry the webhook secret.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stopChild } from "../../bench/lib/child.js";
import { telegramDriver } from "../../bench/lib/platforms.js";
import { chatSdk, grammyPlain, type RunningSystem } from "../../bench/peers/systems.js";

const d = telegramDriver(5, { webhook: true });
beforeAll(() => d.start());
afterAll(() => d.close());

describe.each([grammyPlain, chatSdk])("$label", (sys) => {
  let running: RunningSystem;
  beforeAll(async () => {
    running = await sys.start(d);
    await d.setEventsUrl(running.url);
  });
  afterAll(() => stopChild(running.child));

  it("answers echo: <text> in a private chat and in a group", async () => {
    // Chat 0 is a group (every fifth), chat 1 a private chat.
    d.say(0, `m ${sys.key}-group`);
    d.say(1, `m ${sys.key}-dm`);
    await d.waitFor(() => {
      const texts = d.replies().map((r) => r.text);
      return texts.includes(`echo: m ${sys.key}-group`) && texts.includes(`echo: m ${sys.key}-dm`);
    }, 30_000);
  });

  it("refuses an update without the webhook secret, and does not answer it", async () => {
    const from = d.fake.user("stranger");
    const update = { message: { message_id: 1, date: Math.floor(Date.now() / 1000), chat: d.fake.privateChat(from), from, text: `m ${sys.key}-stranger` } };
    const url = d.fake.webhook!.url;
    for (const secret of [undefined, "wrong"]) expect((await d.fake.deliverWebhook(url, update as never, secret)).status).toBeGreaterThanOrEqual(400);
    // A message that is answered after the refused ones: had they been taken, their answers would be there too.
    d.say(1, `m ${sys.key}-after`);
    await d.waitFor(() => d.replies().some((r) => r.text === `echo: m ${sys.key}-after`), 30_000);
    expect(d.replies().filter((r) => r.text.includes("stranger"))).toEqual([]);
  });
});
