import { afterEach, describe, expect, it } from "vitest";
import { DiscordAdapter } from "../../adapters/discord/index.js";
import { SlackAdapter } from "../../adapters/slack/index.js";
import { TelegramAdapter } from "../../adapters/telegram/index.js";
import type { App } from "../../src/gateway/app.js";
import { FakeDiscord } from "../fakes/discord.js";
import { FakeSlack } from "../fakes/slack.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { eventually, startApp } from "../support/app.js";

/**
 * A forwarded "/approve CODE" is someone else's words: it reaches the agent
 * as content and never runs as the forwarder's command, on every platform,
 * through the real SDKs. The forwarder here is an operator, so running it
 * as a command would have approved the stranger.
 */
describe("forwarded messages are content, never commands", () => {
  const apps: App[] = [];
  const fakes: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const a of apps.splice(0)) await a.stop().catch(() => undefined);
    for (const f of fakes.splice(0)) await f.close();
  });
  const codeOf = (text: string) => /pairing code is ([A-Z0-9]{8})/.exec(text)![1]!;

  it("Telegram: a forward (forward_origin) of /approve CODE is answered as text and approves nobody", async () => {
    const fake = new FakeTelegram();
    await fake.start();
    fakes.push(fake);
    const stranger = fake.user("Mallory");
    const op = fake.user("Olive");
    const { app } = await startApp("sqlite", [new TelegramAdapter({ token: fake.token, apiRoot: fake.apiRoot, pollingTimeoutSec: 1 })], {
      DM_POLICY: "pairing",
      ADMIN_USERS: `telegram:${op.id}`,
    });
    apps.push(app);
    const strangerDm = fake.privateChat(stranger);
    const opDm = fake.privateChat(op);
    fake.userMessage({ chat: strangerDm, from: stranger, text: "hi" });
    const [hello] = await eventually(
      () => fake.sent({ chatId: strangerDm.id }),
      (s) => s.length === 1,
      10_000,
      "the pairing reply",
    );
    const code = codeOf(hello!.text);

    fake.userMessage({ chat: opDm, from: op, text: `/approve ${code}`, forwardFrom: stranger });
    const [answer] = await eventually(
      () => fake.sent({ chatId: opDm.id }),
      (s) => s.length === 1,
      10_000,
      "the answer to the forward",
    );
    expect(answer!.text).toBe(`echo: [Forwarded message from Mallory]\n/approve ${code}`);
    // A hidden sender and a forward from a channel are forwards too.
    fake.userMessage({ chat: opDm, from: op, text: "/new", forwardFrom: "Anonymous" });
    fake.userMessage({ chat: opDm, from: op, text: "/status", forwardFrom: fake.supergroup("News") });
    await eventually(
      () => fake.sent({ chatId: opDm.id }),
      (s) => s.length === 3,
      10_000,
      "the other forwards' answers",
    );
    expect(
      fake
        .sent({ chatId: opDm.id })
        .map((s) => s.text)
        .slice(1),
    ).toEqual(["echo: [Forwarded message from Anonymous]\n/new", "echo: [Forwarded message from News]\n/status"]);

    // Still not approved: the stranger is asked to pair again, with the same code.
    fake.userMessage({ chat: strangerDm, from: stranger, text: "and now?" });
    const again = await eventually(
      () => fake.sent({ chatId: strangerDm.id }),
      (s) => s.length === 2,
      10_000,
      "the second pairing reply",
    );
    expect(codeOf(again[1]!.text)).toBe(code);
    // The operator's own command still works.
    fake.userMessage({ chat: opDm, from: op, text: `/approve ${code}` });
    const done = await eventually(
      () => fake.sent({ chatId: opDm.id }),
      (s) => s.length === 4,
      10_000,
      "the approval",
    );
    expect(done[3]!.text).toBe(`✅ Approved ${stranger.id} on telegram.`);
  });

  it("Discord: a forward (message_reference type 1 with a snapshot) of /approve CODE is answered as text and approves nobody", async () => {
    const fake = new FakeDiscord();
    await fake.start();
    fakes.push(fake);
    const stranger = fake.user("mallory");
    const op = fake.user("olive");
    const { app } = await startApp("sqlite", [new DiscordAdapter({ token: fake.token, apiUrl: fake.apiUrl })], {
      DM_POLICY: "pairing",
      ADMIN_USERS: `discord:${op.id}`,
    });
    apps.push(app);
    const strangerDm = fake.dmChannel(stranger);
    const opDm = fake.dmChannel(op);
    fake.userMessage({ channel: strangerDm, author: stranger, content: "hi" });
    const [hello] = await eventually(
      () => fake.sent({ channelId: strangerDm.id }),
      (s) => s.length === 1,
      10_000,
      "the pairing reply",
    );
    const code = codeOf(hello!.content);

    fake.forwardMessage({ channel: opDm, author: op, message: { content: `/approve ${code}` } });
    const [answer] = await eventually(
      () => fake.sent({ channelId: opDm.id }),
      (s) => s.length === 1,
      10_000,
      "the answer to the forward",
    );
    // As a reader sees it (the brackets are backslash-escaped in Discord markdown).
    expect(answer!.content.replace(/\\(.)/g, "$1")).toBe(`echo: [Forwarded message]\n/approve ${code}`);

    fake.userMessage({ channel: strangerDm, author: stranger, content: "and now?" });
    const again = await eventually(
      () => fake.sent({ channelId: strangerDm.id }),
      (s) => s.length === 2,
      10_000,
      "the second pairing reply",
    );
    expect(codeOf(again[1]!.content)).toBe(code);
    fake.userMessage({ channel: opDm, author: op, content: `/approve ${code}` });
    const done = await eventually(
      () => fake.sent({ channelId: opDm.id }),
      (s) => s.length === 2,
      10_000,
      "the approval",
    );
    expect(done[1]!.content).toBe(`✅ Approved ${stranger.id} on discord.`);
  });

  it("Slack: a shared message (is_share attachment) of /approve CODE is answered as text, with or without a comment, and approves nobody", async () => {
    const fake = new FakeSlack();
    await fake.start();
    fakes.push(fake);
    const { app, url } = await startApp("sqlite", [new SlackAdapter({ botToken: fake.botToken, signingSecret: fake.signingSecret, apiUrl: fake.apiUrl })], {
      DM_POLICY: "pairing",
      ADMIN_USERS: "slack:U0000OLIV",
    });
    apps.push(app);
    const events = `${url}/slack/events`;
    await fake.postEvent(events, fake.events.message({ channel: "D0000MALL", user: "U0000MALL", text: "hi" }));
    const [hello] = await eventually(
      () => fake.sent({ channel: "D0000MALL" }),
      (s) => s.length === 1,
      10_000,
      "the pairing reply",
    );
    const code = codeOf(hello!.text);

    await fake.postEvent(
      events,
      fake.events.message({ channel: "D0000OLIV", user: "U0000OLIV", text: "", shared: [{ text: `/approve ${code}`, authorName: "mallory" }] }),
    );
    await eventually(
      () => fake.sent({ channel: "D0000OLIV" }),
      (s) => s.length === 1,
      10_000,
      "the answer to the share",
    );
    // A comment that is itself a command does not turn the share into its argument.
    await fake.postEvent(
      events,
      fake.events.message({ channel: "D0000OLIV", user: "U0000OLIV", text: "/approve", shared: [{ text: code, authorName: "mallory" }] }),
    );
    const answers = await eventually(
      () => fake.sent({ channel: "D0000OLIV" }),
      (s) => s.length === 2,
      10_000,
      "the answer to the commented share",
    );
    expect(answers.map((m) => m.text)).toEqual([
      `echo: [Forwarded message from mallory]\n/approve ${code}`,
      `echo: [Forwarded message from mallory]\n${code}\n\n/approve`,
    ]);

    await fake.postEvent(events, fake.events.message({ channel: "D0000MALL", user: "U0000MALL", text: "and now?" }));
    const again = await eventually(
      () => fake.sent({ channel: "D0000MALL" }),
      (s) => s.length === 2,
      10_000,
      "the second pairing reply",
    );
    expect(codeOf(again[1]!.text)).toBe(code);
  });
});
