/**
 * A user edits or deletes a message they sent: through the real SDKs
 * against the fakes, the transcript entry takes the new text (marked
 * edited) or is marked deleted, the bot answers nothing for the change, and
 * the model's next turn sees the edited text and never the deleted one.
 */
import { afterEach, describe, expect, it } from "vitest";
import { DiscordAdapter } from "../../adapters/discord/index.js";
import { SlackAdapter } from "../../adapters/slack/index.js";
import { TelegramAdapter } from "../../adapters/telegram/index.js";
import type { Agent, ChatMessage } from "../../src/agent/types.js";
import type { App } from "../../src/gateway/app.js";
import { FakeDiscord } from "../fakes/discord.js";
import { FakeSlack } from "../fakes/slack.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { eventually, startApp } from "../support/app.js";
import { prisma } from "../support/prisma.js";

/** Answers with every user message it was given, oldest first: what the model saw. */
function historyAgent(): Agent {
  return {
    name: "history",
    async *run(req) {
      const seen = req.messages.filter((m: ChatMessage) => m.role === "user").map((m) => m.content);
      yield { type: "done", text: `saw: ${seen.join(" | ")}`, toolRounds: 0 };
    },
  };
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function handled(app: App, n: number): Promise<void> {
  await eventually(
    async () => prisma(app.db).read((db) => db.inboundEvent.count({ where: { status: "done" } })),
    (c) => c >= n,
    15_000,
    `${n} events handled`,
  );
}

async function entries(app: App, sessionText: RegExp) {
  const rows = await prisma(app.db).read((db) => db.message.findMany({ where: { role: "user" }, orderBy: [{ sessionId: "asc" }, { seq: "asc" }] }));
  return rows
    .filter((r) => sessionText.test(r.content) || r.deletedAt || r.editedAt)
    .map((r) => ({ content: r.content, edited: r.editedAt !== null, deleted: r.deletedAt !== null }));
}

describe("edits and deletes reach the transcript, never the model as they were", () => {
  it("Telegram (grammY): edited_message updates the entry; the next turn sees the new text", async () => {
    const tg = new FakeTelegram();
    await tg.start();
    cleanups.push(() => tg.close());
    const adapter = new TelegramAdapter({ token: tg.token, apiRoot: tg.apiRoot, mode: "polling", pollingTimeoutSec: 1 });
    const { app } = await startApp("sqlite", [adapter], {}, { agentFactory: () => historyAgent() });
    cleanups.push(() => app.stop());
    const alice = tg.user("Alice");
    const dm = tg.privateChat(alice);
    const first = tg.userMessage({ chat: dm, from: alice, text: "my number is 41" });
    await eventually(
      () => tg.sent({ chatId: dm.id }).length,
      (n) => n >= 1,
      15_000,
      "the first answer",
    );
    tg.editMessage(first.message!, "my number is 42");
    await handled(app, 2);
    tg.userMessage({ chat: dm, from: alice, text: "which number?" });
    const replies = await eventually(
      () => tg.sent({ chatId: dm.id }).map((m) => m.text),
      (r) => r.length >= 2,
      15_000,
      "the second answer",
    );
    expect(replies).toEqual(["saw: my number is 41", "saw: my number is 42 | which number?"]);
    expect(await entries(app, /number/)).toEqual([
      { content: "my number is 42", edited: true, deleted: false },
      { content: "which number?", edited: false, deleted: false },
    ]);
  });

  it("Discord (discord.js): MESSAGE_UPDATE edits, MESSAGE_DELETE removes it from what the model sees", async () => {
    const dc = new FakeDiscord();
    await dc.start();
    cleanups.push(() => dc.close());
    const alice = dc.user("alice");
    const guild = dc.addGuild({ channels: ["general"], members: [alice] });
    const channel = guild.channels.general!;
    const adapter = new DiscordAdapter({ token: dc.token, apiUrl: dc.apiUrl });
    const { app } = await startApp("sqlite", [adapter], { GROUP_REQUIRE_MENTION: "true" }, { agentFactory: () => historyAgent() });
    cleanups.push(() => app.stop());
    const bot = `<@${dc.bot.id}>`;
    const secret = dc.userMessage({ channel, author: alice, content: `${bot} the password is hunter2` });
    const typo = dc.userMessage({ channel, author: alice, content: "I like catz" });
    await eventually(
      () => dc.sent({ channelId: channel.id }).length,
      (n) => n >= 1,
      15_000,
      "the first answer",
    );
    await handled(app, 2);
    dc.deleteUserMessage(secret);
    dc.editUserMessage(typo, "I like cats");
    await handled(app, 4);
    dc.userMessage({ channel, author: alice, content: `${bot} what do you know?` });
    const replies = await eventually(
      () => dc.sent({ channelId: channel.id }).map((m) => m.content),
      (r) => r.length >= 2,
      15_000,
      "the second answer",
    );
    // Discord markdown: the agent's literal "|" is escaped (a doubled one would be a spoiler); Discord shows "|".
    expect(replies[1]).toBe("saw: I like cats \\| what do you know?");
    expect(replies.join("\n")).not.toContain("catz");
    // A context message can be written before the running turn commits its own user message, so
    // this compares the entries' flags, not their order (the order is the runner's, not under test here).
    const byContent = (a: { content: string }, b: { content: string }) => a.content.localeCompare(b.content);
    expect((await entries(app, /password|cat|know/)).sort(byContent)).toEqual([
      { content: "I like cats", edited: true, deleted: false },
      { content: "the password is hunter2", edited: false, deleted: true },
      { content: "what do you know?", edited: false, deleted: false },
    ]);
    // No answer to either change.
    expect(replies).toHaveLength(2);
  });

  it("Slack (Bolt, HTTP): message_changed and message_deleted, in a DM", async () => {
    const sl = new FakeSlack();
    await sl.start();
    cleanups.push(() => sl.close());
    const adapter = new SlackAdapter({ botToken: sl.botToken, signingSecret: sl.signingSecret, apiUrl: sl.apiUrl });
    const { app, url } = await startApp("sqlite", [adapter], {}, { agentFactory: () => historyAgent() });
    cleanups.push(() => app.stop());
    const events = `${url}/slack/events`;
    const channel = "D0EDITS01";
    const user = "U0EDITOR1";
    const now = Math.floor(Date.now() / 1000);
    const ts = (n: number) => `${now}.${String(n).padStart(6, "0")}`;
    const post = async (body: object) => expect((await sl.postEvent(events, body)).status).toBe(200);
    await post(sl.events.message({ channel, user, text: "meet at 5pm", ts: ts(1) }));
    await post(sl.events.message({ channel, user, text: "bring snacks", ts: ts(2) }));
    await eventually(
      () => sl.sent({ channel }).length,
      (n) => n >= 2,
      15_000,
      "two answers",
    );
    await post(sl.events.messageChanged({ channel, user, ts: ts(1), text: "meet at 6pm", previousText: "meet at 5pm" }));
    await post(sl.events.messageDeleted({ channel, user, ts: ts(2), text: "bring snacks" }));
    // A message_changed that changes nothing (a link unfurl) is no edit.
    await post(sl.events.messageChanged({ channel, user, ts: ts(1), text: "meet at 6pm", previousText: "meet at 6pm" }));
    await handled(app, 4);
    await post(sl.events.message({ channel, user, text: "when again?", ts: ts(3) }));
    const replies = await eventually(
      () => sl.sent({ channel }).map((m) => m.text),
      (r) => r.length >= 3,
      15_000,
      "the third answer",
    );
    expect(replies[2]).toBe("saw: meet at 6pm | when again?");
    expect(await entries(app, /meet|snacks|again/)).toEqual([
      { content: "meet at 6pm", edited: true, deleted: false },
      { content: "bring snacks", edited: false, deleted: true },
      { content: "when again?", edited: false, deleted: false },
    ]);
    expect(replies).toHaveLength(3);
  });
});
