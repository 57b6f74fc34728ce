/**
 * Red-team probes: an approval and an "Always" grant belong to the
 * conversation they were asked in. In a Telegram forum every topic is its
 * own conversation (its own session), so an "Always" pressed in topic A
 * must not approve calls in topic B. (A typed `/approve <id>` is the
 * chat's wherever it is typed: the topics share the group's members, and
 * Slack's slash command carries no thread.) And when a
 * basic group becomes a supergroup, its pending approvals and its grants go
 * with it to the new chat id, as its session and admission do. Real grammY
 * adapter against the loopback fake, real SQLite file. APPROVERS=anyone, so
 * every member who passes the DM policy may decide a call in its own
 * conversation: what is refused here is refused for where, not for who.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TelegramAdapter } from "../../../adapters/telegram/index.js";
import type { App } from "../../../src/gateway/app.js";
import type { FakeOpenAi } from "../../fakes/openai.js";
import { FakeTelegram, type TgChat, type TgMessage, type TgUser } from "../../fakes/telegram.js";
import { eventually, startApp } from "../../support/app.js";
import { clockAgent } from "../../support/clock-agent.js";

const CLOCK = "use the clock";
const CARD = /The agent wants to use the tool/;
const ANSWER = /the tool said: UTC:/;
let fake: FakeTelegram;
let app: App;
let model: FakeOpenAi;

beforeAll(async () => {
  fake = new FakeTelegram();
  await fake.start();
  const clock = await clockAgent(CLOCK, "probe");
  model = clock.model;
  const adapter = new TelegramAdapter({ token: fake.token, apiRoot: fake.apiRoot, mode: "polling", pollingTimeoutSec: 1 });
  const r = await startApp(
    "sqlite",
    [adapter],
    { DM_POLICY: "open", GROUP_POLICY: "open", GROUP_REQUIRE_MENTION: "true", APPROVERS: "anyone", REFLECT_EVERY_TURNS: "0" },
    { agentFactory: clock.agentFactory as never, mcpConfig: { servers: [], builtinTools: { current_time: { policy: "ask" } } } },
  );
  app = r.app;
});

afterAll(async () => {
  await app?.stop();
  await fake?.close();
  await model?.close();
});

/** What the bot said in a chat (a topic: its messages only; 0: General, which carries no thread id). */
const said = (chat: TgChat, thread?: number) =>
  fake
    .sent({ chatId: chat.id })
    .filter((s) => thread === undefined || (s.threadId ?? 0) === thread)
    .map((s) => s.text);
const count = (chat: TgChat, re: RegExp, thread?: number) => said(chat, thread).filter((t) => re.test(t)).length;
const waitCount = (chat: TgChat, re: RegExp, n: number, what: string, thread?: number) =>
  eventually(
    () => count(chat, re, thread),
    (c) => c >= n,
    15_000,
    what,
  );

/** The newest card in the chat (or topic), its message and its approval's id. */
async function lastCard(chat: TgChat, thread?: number): Promise<{ msg: TgMessage; id: string }> {
  const card = fake
    .sent({ chatId: chat.id })
    .filter((s) => CARD.test(s.text) && (thread === undefined || (s.threadId ?? 0) === thread))
    .at(-1)!;
  // The card is on the platform a moment before its message id is on the row (ApprovalStore.setCard).
  const [row] = await eventually(
    () =>
      app.db.query(
        "probe-approval",
        app.db.q.selectFrom("Approval").select("id").where("cardMessageId", "=", String(card.messageId)).where("chatId", "=", String(chat.id)),
      ),
    (rows) => rows.length === 1,
    15_000,
    "the card's approval row",
  );
  return { msg: fake.message(chat.id, card.messageId)!, id: row!.id };
}

const status = async (id: string) =>
  (await app.db.query("probe-approval-status", app.db.q.selectFrom("Approval").select(["status", "chatId"]).where("id", "=", id)))[0];

function press(from: TgUser, msg: TgMessage, action: "approve" | "always" | "deny") {
  const data = (msg.reply_markup as { inline_keyboard: Array<Array<{ callback_data: string }>> }).inline_keyboard
    .flat()
    .find((b) => b.callback_data.startsWith(`approval:${action}:`))!.callback_data;
  const q = fake.callbackQuery({ from, message: msg, data });
  return eventually(() => fake.callbackAnswer(q.callback_query!.id), Boolean, 15_000, `the answer to the ${action} press`);
}

/** A barrier: a later message of the same conversation is handled after the ones before it. */
async function barrier(chat: TgChat, from: TgUser, thread: number | undefined, tag: string) {
  const n = count(chat, new RegExp(`echo: .*${tag}`), thread);
  fake.userMessage({ chat, from, text: `@${fake.botUser.username} ${tag}`, ...(thread !== undefined && { threadId: thread }) });
  await waitCount(chat, new RegExp(`echo: .*${tag}`), n + 1, `the echo of ${tag}`, thread);
}

describe("forum topics: approvals and grants belong to their topic", () => {
  it("'Always' pressed in topic A approves later calls in topic A only: topic B and General still ask", async () => {
    const forum = fake.supergroup("forum-always", { forum: true });
    const alice = fake.user("Alicia");
    const a = fake.forumTopic(forum, "A", alice);
    const b = fake.forumTopic(forum, "B", alice);
    fake.userMessage({ chat: forum, from: alice, threadId: a, text: `@${fake.botUser.username} ${CLOCK}` });
    await waitCount(forum, CARD, 1, "the first card in topic A", a);
    const answer = await press(alice, (await lastCard(forum, a)).msg, "always");
    expect(answer!.text).toMatch(/always in this chat/);
    await waitCount(forum, ANSWER, 1, "the first answer in topic A", a);

    // Topic A again: the grant holds there, no card.
    fake.userMessage({ chat: forum, from: alice, threadId: a, text: `@${fake.botUser.username} ${CLOCK} again` });
    await waitCount(forum, ANSWER, 2, "the second answer in topic A", a);
    expect(count(forum, CARD, a)).toBe(1);

    // Topic B: a card, not an answer.
    fake.userMessage({ chat: forum, from: alice, threadId: b, text: `@${fake.botUser.username} ${CLOCK} in B` });
    await waitCount(forum, CARD, 1, "a card in topic B", b);
    const inB = await lastCard(forum, b);
    expect(count(forum, ANSWER, b)).toBe(0);
    await press(alice, inB.msg, "deny");
    await waitCount(forum, /Denied|denied/, 1, "the denial in topic B", b);

    // General (no thread id): a card too.
    fake.userMessage({ chat: forum, from: alice, text: `@${fake.botUser.username} ${CLOCK} in General` });
    await waitCount(forum, CARD, 1, "a card in General", 0);
    await press(alice, (await lastCard(forum, 0)).msg, "deny");
    await barrier(forum, alice, 0, "general-done");
    expect(count(forum, ANSWER, 0)).toBe(0);
  });

  it("a group without topics works as before: 'Always' covers the whole group, reply chains (message_thread_id) included", async () => {
    const group = fake.supergroup("plain-always");
    const carol = fake.user("Carol");
    const dave = fake.user("Dave");
    fake.userMessage({ chat: group, from: carol, text: `@${fake.botUser.username} ${CLOCK}` });
    await waitCount(group, CARD, 1, "the card");
    const first = await lastCard(group);
    await press(carol, first.msg, "always");
    await waitCount(group, ANSWER, 1, "the first answer");
    // In a supergroup without topics, message_thread_id marks a reply chain: still the group's conversation.
    fake.userMessage({ chat: group, from: dave, threadId: first.msg.message_id, text: `@${fake.botUser.username} ${CLOCK} in a chain` });
    await waitCount(group, ANSWER, 2, "the second answer, without a card");
    expect(count(group, CARD)).toBe(1);
    // A typed /approve in a reply chain decides the group's approval (there is no topic to match).
    fake.userMessage({ chat: group, from: dave, text: `@${fake.botUser.username} ${CLOCK} with a typed approval` });
    await waitCount(group, ANSWER, 3, "the third answer, under the grant");
    const plain = fake.supergroup("plain-typed");
    fake.userMessage({ chat: plain, from: carol, text: `@${fake.botUser.username} ${CLOCK}` });
    await waitCount(plain, CARD, 1, "the card");
    const card = await lastCard(plain);
    fake.userMessage({ chat: plain, from: dave, threadId: card.msg.message_id, text: `/approve ${card.id}` });
    await waitCount(plain, ANSWER, 1, "the answer after Dave's typed /approve in a reply chain");
  });
});

describe("a basic group upgraded to a supergroup: its approvals and grants follow it", () => {
  it("a card pressed after the upgrade (reported from the new chat id) decides, a typed /approve in the supergroup too, an 'Always' grant holds; both service messages and a redelivery apply once", async () => {
    const fay = fake.user("Fay");
    const gus = fake.user("Gus");
    // An "Always" pressed in one basic group; a call left pending in each of two others.
    const granted = fake.group("basic-always");
    fake.userMessage({ chat: granted, from: fay, text: `@${fake.botUser.username} ${CLOCK}` });
    await waitCount(granted, CARD, 1, "the card to grant");
    await press(fay, (await lastCard(granted)).msg, "always");
    await waitCount(granted, ANSWER, 1, "the answer under the grant");
    const pressed = fake.group("basic-pressed");
    fake.userMessage({ chat: pressed, from: fay, text: `@${fake.botUser.username} ${CLOCK}` });
    await waitCount(pressed, CARD, 1, "the card to press");
    const toPress = await lastCard(pressed);
    const typed = fake.group("basic-typed");
    fake.userMessage({ chat: typed, from: gus, text: `@${fake.botUser.username} ${CLOCK}` });
    await waitCount(typed, CARD, 1, "the card to approve by its id");
    const toType = await lastCard(typed);

    const superGranted = fake.migrateToSupergroup(granted, fay);
    const superPressed = fake.migrateToSupergroup(pressed, fay);
    const superTyped = fake.migrateToSupergroup(typed, gus);
    // Telegram's pair of service messages again (a redelivery): nothing fails, nothing moves twice.
    const now = Math.floor(Date.now() / 1000);
    fake.inject({ message: { message_id: 9_001, chat: pressed, date: now, migrate_to_chat_id: superPressed.id, from: fay } });
    fake.inject({ message: { message_id: 9_002, chat: superPressed, date: now, migrate_from_chat_id: pressed.id, from: fay } });
    for (const [rec, to] of [
      [toPress, superPressed],
      [toType, superTyped],
    ] as const)
      await eventually(
        async () => (await status(rec.id))?.chatId,
        (c) => c === String(to.id),
        15_000,
        "the pending approval moved to its group's new chat id",
      );

    // Telegram reports a press on the old card from the new chat id.
    const answer = await press(fay, { ...toPress.msg, chat: superPressed }, "approve");
    expect(answer!.text).toBe("Approved.");
    expect((await status(toPress.id))!.status).toBe("approved");

    fake.userMessage({ chat: superTyped, from: gus, text: `/approve ${toType.id}` });
    await eventually(
      async () => (await status(toType.id))?.status,
      (s) => s === "approved",
      15_000,
      "the approval decided by a typed /approve in the supergroup",
    );

    // The basic group's "Always" holds in its supergroup: an answer, no card.
    fake.userMessage({ chat: superGranted, from: gus, text: `@${fake.botUser.username} ${CLOCK} after the upgrade` });
    await waitCount(superGranted, ANSWER, 1, "the answer in the supergroup under the moved grant");
    expect(count(superGranted, CARD)).toBe(0);
  });
});
