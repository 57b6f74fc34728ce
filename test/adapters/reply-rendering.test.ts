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
 * Replies are rendered for the platform before they are split, and no reply
 * is lost to formatting: a chunk refused as too long is split smaller, one
 * refused for its formatting is sent as plain text. Through the real SDKs,
 * the gateway and the echo agent ("echo: <text>") against the fakes, which
 * refuse over-long content and unparsable entities as the platforms do.
 */
describe("replies rendered per platform, never lost to formatting", () => {
  const apps: App[] = [];
  const fakes: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const a of apps.splice(0)) await a.stop().catch(() => undefined);
    for (const f of fakes.splice(0)) await f.close();
  });
  const letters = (s: string) => (s.replace(/\u200b/g, "").match(/[\p{L}\p{N}]+/gu) ?? []).join("");
  const metric = async (url: string, line: string) => (await (await fetch(`${url}/metrics`)).text()).split("\n").find((l) => l.startsWith(line));

  it("Discord: a reply of exactly 2,000 characters with @everyone is delivered (defused before splitting, never 2,001)", async () => {
    const fake = new FakeDiscord();
    await fake.start();
    fakes.push(fake);
    const { app } = await startApp("sqlite", [new DiscordAdapter({ token: fake.token, apiUrl: fake.apiUrl })]);
    apps.push(app);
    const alice = fake.user("alice");
    const dm = fake.dmChannel(alice);
    const text = `@everyone ${"abcd ".repeat(397)}wxyz`.slice(0, 1994);
    expect(`echo: ${text}`.length).toBe(2000);
    fake.userMessage({ channel: dm, author: alice, content: text });
    const sent = await eventually(
      () => fake.sent({ channelId: dm.id }),
      (s) => s.length === 2,
      15_000,
      "the reply, in two messages",
    );
    expect(sent.every((m) => m.content.length <= 2000)).toBe(true);
    expect(sent.map((m) => m.content).join(" ")).not.toMatch(/@everyone/);
    expect(letters(sent.map((m) => m.content).join(" "))).toBe(letters(`echo: ${text}`));
    // No refusal happened: every chunk fit as it was sent.
    expect(fake.restCalls("POST /channels/:id/messages").filter((c) => c.status !== 200)).toEqual([]);
  });

  it("Discord: a chunk refused as too long (50035) is split smaller and sent, not failed", async () => {
    const fake = new FakeDiscord();
    await fake.start();
    fakes.push(fake);
    const { app, url } = await startApp("sqlite", [new DiscordAdapter({ token: fake.token, apiUrl: fake.apiUrl })]);
    apps.push(app);
    const alice = fake.user("alice");
    const dm = fake.dmChannel(alice);
    fake.failNext("POST /channels/:id/messages", {
      status: 400,
      code: 50035,
      message: "Invalid Form Body\ncontent[BASE_TYPE_MAX_LENGTH]: Must be 2000 or fewer in length.",
    });
    fake.userMessage({ channel: dm, author: alice, content: "one two three four five six seven eight nine ten" });
    const want = letters("echo: one two three four five six seven eight nine ten");
    const sent = await eventually(
      () => fake.sent({ channelId: dm.id }),
      (s) => letters(s.map((m) => m.content).join(" ")) === want,
      15_000,
      "the whole re-split reply",
    );
    expect(sent.length).toBeGreaterThanOrEqual(2);
    expect(await metric(url, 'switchboard_outbound_total{platform="discord",call="send",outcome="resplit"}')).toMatch(/ 1$/);
  });

  it('Telegram: a chunk refused with "can\'t parse entities" is resent as plain text; one refused as too long is split', async () => {
    const fake = new FakeTelegram();
    await fake.start();
    fakes.push(fake);
    const { app, url } = await startApp("sqlite", [new TelegramAdapter({ token: fake.token, apiRoot: fake.apiRoot, pollingTimeoutSec: 1 })]);
    apps.push(app);
    const alice = fake.user("Alice");
    const dm = fake.privateChat(alice);
    fake.failNext("sendMessage", { status: 400, description: 'Bad Request: can\'t parse entities: Unsupported start tag "x" at byte offset 0' });
    fake.userMessage({ chat: dm, from: alice, text: "**hi** <b> & more" });
    const [plain] = await eventually(
      () => fake.sent({ chatId: dm.id }),
      (s) => s.length === 1,
      15_000,
      "the plain-text reply",
    );
    expect(plain!.parseMode).toBeUndefined();
    expect(plain!.text).toBe("echo: hi <b> & more");
    expect(await metric(url, 'switchboard_outbound_total{platform="telegram",call="send",outcome="plain"}')).toMatch(/ 1$/);

    fake.failNext("sendMessage", { status: 400, description: "Bad Request: message is too long" });
    fake.userMessage({ chat: dm, from: alice, text: "**alpha beta** gamma delta epsilon zeta eta theta" });
    const want = letters("echo: alpha beta gamma delta epsilon zeta eta theta");
    const all = await eventually(
      () => fake.sent({ chatId: dm.id }),
      (s) =>
        letters(
          s
            .slice(1)
            .map((m) => m.text)
            .join(" "),
        ) === want,
      15_000,
      "the whole re-split reply",
    );
    const pieces = all.slice(1);
    expect(pieces.length).toBeGreaterThanOrEqual(2);
    expect(pieces.every((m) => m.parseMode === "HTML")).toBe(true);
    // The bold survived the split: each piece reopens it.
    expect(pieces[0]!.entities.map((e) => e.type)).toContain("bold");
  });

  it("Slack: Markdown arrives as mrkdwn (bold, links, lists) with nothing Slack would misread", async () => {
    const fake = new FakeSlack();
    await fake.start();
    fakes.push(fake);
    const { app, url } = await startApp("sqlite", [new SlackAdapter({ botToken: fake.botToken, signingSecret: fake.signingSecret, apiUrl: fake.apiUrl })]);
    apps.push(app);
    const body = fake.events.message({
      channel: "D0000FMT1",
      user: "U0000FMT1",
      text: "**bold** and [docs](https://x.test/a?b=1&c=2)\n\n- one\n- two &lt;!channel&gt;",
    });
    await fake.postEvent(`${url}/slack/events`, body);
    const [reply] = await eventually(
      () => fake.sent({ channel: "D0000FMT1" }),
      (s) => s.length === 1,
      15_000,
      "the reply",
    );
    expect(reply!.text).toBe("echo: *bold* and <https://x.test/a?b=1&amp;c=2|docs>\n\n• one\n• two &lt;!channel&gt;");
    expect(reply!.mrkdwn).toEqual({ shown: "echo: bold and docs\n\n• one\n• two <!channel>", problems: [] });

    fake.failNext("chat.postMessage", { error: "msg_too_long" });
    await fake.postEvent(`${url}/slack/events`, fake.events.message({ channel: "D0000FMT1", user: "U0000FMT1", text: "split me please, kindly" }));
    const whole = letters("echo: split me please, kindly");
    const all = await eventually(
      () => fake.sent({ channel: "D0000FMT1" }),
      (s) =>
        letters(
          s
            .slice(1)
            .map((m) => m.text)
            .join(" "),
        ) === whole,
      15_000,
      "the whole re-split reply",
    );
    expect(all.length).toBeGreaterThanOrEqual(3);
  });

  it("Telegram: a refused chunk whose link tag cannot fit half the chunk is split as plain text instead, and arrives whole", async () => {
    const fake = new FakeTelegram();
    await fake.start();
    fakes.push(fake);
    const { app } = await startApp("sqlite", [new TelegramAdapter({ token: fake.token, apiRoot: fake.apiRoot, pollingTimeoutSec: 1 })]);
    apps.push(app);
    const alice = fake.user("Alice");
    const dm = fake.privateChat(alice);
    const href = `https://example.com/${"p".repeat(300)}`;
    fake.failNext("sendMessage", { status: 400, description: "Bad Request: message is too long" });
    fake.userMessage({ chat: dm, from: alice, text: `see [the long link](${href}) now` });
    const want = letters("echo: see the long link now");
    const sent = await eventually(
      () => fake.sent({ chatId: dm.id }),
      (s) => letters(s.map((m) => m.text).join(" ")) === want,
      15_000,
      "the whole reply",
    );
    // Without the tag the text fits in one piece, sent without parse_mode.
    expect(sent.every((m) => m.parseMode === undefined)).toBe(true);
    expect(fake.callsTo("sendMessage").filter((c) => c.status === 400)).toHaveLength(1);
  });
});
