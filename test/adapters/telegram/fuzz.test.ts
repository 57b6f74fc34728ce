/**
 * normalizeUpdate never throws: 10,000+ inputs shaped like the Bot API's
 * Update (every field optional, any field possibly of the wrong type,
 * entities pointing anywhere) plus arbitrary JSON and arbitrary values. The
 * UNGUARDED function is fuzzed, so the try/catch in normalizeUpdate is proven
 * to be a spare, not what keeps it alive. The webhook handler gets random
 * bodies too, with a check for unhandled rejections.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeReplyAddress } from "../../../adapters/telegram/ids.js";
import { normalizeUpdateUnguarded, type BotIdentity } from "../../../adapters/telegram/normalize.js";
import { createWebhookHandler, SECRET_HEADER } from "../../../adapters/telegram/webhook.js";
import { silentLogger } from "../../../src/log.js";
import { httpRequest } from "./helpers.js";

const BOT: BotIdentity = { id: "7000000001", username: "switchboard_test_bot" };

/** Mostly the right type, sometimes anything at all. */
const junk = fc.anything({ maxDepth: 1, maxKeys: 3 });
const maybe = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<unknown> => fc.oneof({ weight: 5, arbitrary: a }, { weight: 1, arbitrary: junk });

const idArb = fc.oneof(
  fc.integer({ min: -(10 ** 13), max: 10 ** 13 }),
  fc.constantFrom(7000000001, 0, -0, 2 ** 53, -(2 ** 60), 1.5, Number.NaN, Number.POSITIVE_INFINITY),
);
const textArb = fc.oneof(
  fc.string(),
  fc.string({ unit: "grapheme" }),
  fc.string({ unit: "binary" }),
  fc.constantFrom("@switchboard_test_bot hi", "/new@switchboard_test_bot", "/new@other_bot x", "/help", "@SWITCHBOARD_TEST_BOT", "", " "),
);
const userArb = fc.record(
  {
    id: maybe(idArb),
    is_bot: maybe(fc.boolean()),
    first_name: maybe(fc.string()),
    last_name: maybe(fc.string()),
    username: maybe(fc.constantFrom("switchboard_test_bot", "alice", "other_bot")),
  },
  { requiredKeys: [] },
);
const chatArb = fc.record(
  {
    id: maybe(idArb),
    type: maybe(fc.constantFrom("private", "group", "supergroup", "channel", "sender", "future_type")),
    title: maybe(fc.string()),
    is_forum: maybe(fc.boolean()),
  },
  { requiredKeys: [] },
);
const entityArb = fc.record(
  {
    type: maybe(fc.constantFrom("mention", "text_mention", "bot_command", "url", "bold", "code", "custom_emoji")),
    offset: maybe(fc.integer({ min: -5, max: 60 })),
    length: maybe(fc.integer({ min: -5, max: 60 })),
    user: maybe(userArb),
  },
  { requiredKeys: [] },
);
const fileArb = fc.record(
  {
    file_id: maybe(fc.string()),
    file_unique_id: maybe(fc.string()),
    file_size: maybe(fc.integer()),
    file_name: maybe(fc.string()),
    mime_type: maybe(fc.string()),
    width: maybe(fc.integer()),
    height: maybe(fc.integer()),
    duration: maybe(fc.integer()),
    emoji: maybe(fc.string()),
  },
  { requiredKeys: [] },
);
const messageFields = {
  message_id: maybe(idArb),
  message_thread_id: maybe(idArb),
  is_topic_message: maybe(fc.boolean()),
  from: maybe(userArb),
  sender_chat: maybe(chatArb),
  chat: maybe(chatArb),
  date: maybe(fc.oneof(fc.integer({ min: 0, max: 2 ** 31 }), fc.double())),
  text: maybe(textArb),
  entities: maybe(fc.array(maybe(entityArb), { maxLength: 5 })),
  caption: maybe(textArb),
  caption_entities: maybe(fc.array(maybe(entityArb), { maxLength: 5 })),
  photo: maybe(fc.array(maybe(fileArb), { maxLength: 4 })),
  document: maybe(fileArb),
  voice: maybe(fileArb),
  audio: maybe(fileArb),
  video: maybe(fileArb),
  video_note: maybe(fileArb),
  sticker: maybe(fileArb),
};
const innerMessageArb = fc.record(messageFields, { requiredKeys: [] });
const messageArb = fc.record({ ...messageFields, reply_to_message: maybe(innerMessageArb) }, { requiredKeys: [] });
const updateArb = fc.record(
  {
    update_id: maybe(fc.integer()),
    message: maybe(messageArb),
    edited_message: maybe(messageArb),
    channel_post: maybe(messageArb),
    callback_query: junk,
  },
  { requiredKeys: [] },
);
/** Messages that are well-formed at the top, so the deeper rules (entities, media, replies) are reached often. */
const validishArb = fc.record({
  update_id: fc.nat(),
  message: fc.record({
    message_id: fc.integer({ min: 1, max: 2 ** 31 }),
    date: fc.integer({ min: 0, max: 2 ** 31 }),
    chat: fc.record({ id: fc.integer({ min: -(10 ** 13), max: 10 ** 13 }), type: fc.constantFrom("private", "group", "supergroup") }),
    from: fc.record({ id: fc.integer({ min: 1, max: 10 ** 10 }), is_bot: fc.boolean(), first_name: fc.string() }),
    message_thread_id: fc.option(fc.integer({ min: 1, max: 1000 }), { nil: undefined }),
    is_topic_message: fc.option(fc.boolean(), { nil: undefined }),
    text: textArb,
    entities: fc.array(entityArb, { maxLength: 4 }),
    reply_to_message: fc.option(innerMessageArb, { nil: undefined }),
    photo: fc.option(fc.array(fileArb, { maxLength: 3 }), { nil: undefined }),
  }),
});
const botArb = fc.oneof(fc.constant(BOT), fc.constant({ id: "1" }), fc.record({ id: fc.nat().map(String), username: fc.string() }));

describe("normalizeUpdate fuzz", () => {
  let unhandled = 0;
  const onUnhandled = (): void => {
    unhandled++;
  };
  beforeAll(() => {
    process.on("unhandledRejection", onUnhandled);
  });
  afterAll(() => {
    process.off("unhandledRejection", onUnhandled);
  });

  it("10,000+ Bot-API-shaped and arbitrary inputs: 0 throws, and every envelope is self-consistent", () => {
    let runs = 0;
    let throws = 0;
    let envelopes = 0;
    const check = (input: unknown, bot: BotIdentity): void => {
      runs++;
      let env;
      try {
        env = normalizeUpdateUnguarded(input, bot);
      } catch {
        throws++;
        return;
      }
      if (!env) return;
      envelopes++;
      const u = input as { message?: { chat: { id: number }; message_id: number }; edited_message?: { chat: { id: number }; message_id: number } };
      const m = (u.message ?? u.edited_message)!;
      if (env.change) expect(env.eventId.startsWith(`${m.chat.id}:${m.message_id}:edit:`)).toBe(true);
      else expect(env.eventId).toBe(`${m.chat.id}:${m.message_id}`);
      expect(env.chatId).toBe(String(m.chat.id));
      expect(env.replyTo.chatId).toBe(env.chatId);
      expect(decodeReplyAddress(env.replyTo)).not.toHaveProperty("error");
      expect(env.senderId).not.toBe(bot.id);
      expect(Number.isNaN(env.occurredAt.getTime())).toBe(false);
      expect(env.channel.startsWith(`telegram:${bot.id}:`)).toBe(true);
    };
    fc.assert(
      fc.property(updateArb, botArb, (u, b) => check(u, b)),
      { numRuns: 4000 },
    );
    fc.assert(
      fc.property(validishArb, botArb, (u, b) => check(u, b)),
      { numRuns: 3000 },
    );
    fc.assert(
      fc.property(fc.jsonValue(), (j) => check(j, BOT)),
      { numRuns: 1000 },
    );
    fc.assert(
      fc.property(fc.jsonValue(), (j) => check({ update_id: 1, message: j }, BOT)),
      { numRuns: 1000 },
    );
    fc.assert(
      fc.property(fc.anything({ maxDepth: 3, withNullPrototype: true, withMap: true, withSet: true, withBoxedValues: true, withSparseArray: true }), (a) =>
        check({ message: a }, BOT),
      ),
      { numRuns: 1000 },
    );
    expect(runs).toBeGreaterThanOrEqual(10_000);
    expect(throws).toBe(0);
    // The shaped inputs do reach the envelope-building code.
    expect(envelopes).toBeGreaterThan(500);
  });

  it("the webhook handler answers every random body with 200 or 400 and never rejects", async () => {
    const handler = createWebhookHandler({
      secret: "s3cret",
      bot: () => BOT,
      inbound: async () => undefined,
      accepting: () => true,
      log: silentLogger,
    });
    const statuses = new Map<number, number>();
    const bodies = fc.sample(
      fc.oneof(
        updateArb.map((u) => JSON.stringify(u) ?? "null"),
        fc.string(),
        fc.jsonValue().map((j) => JSON.stringify(j)),
      ),
      1500,
    );
    for (const body of bodies) {
      const res = await handler(httpRequest("POST", "/telegram/7000000001", { [SECRET_HEADER]: "s3cret" }, Buffer.from(body)));
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    }
    expect([...statuses.keys()].every((s) => s === 200 || s === 400)).toBe(true);
    await new Promise((r) => setImmediate(r));
    expect(unhandled).toBe(0);
  });
});
