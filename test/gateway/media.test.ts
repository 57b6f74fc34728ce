/**
 * Images, voice and speakers through the real SDKs against the fakes, with
 * the real OpenAI-compatible client against the fake model: an image the
 * user sends reaches the model as an image content part (the request body
 * is asserted, bytes included); one over IMAGE_MAX_BYTES, or one that is
 * not an image whatever it claims, gets a polite reply; a voice note is
 * transcribed through the fake /audio/transcriptions (its multipart body
 * asserted) and reaches the agent as text marked transcribed, or, without
 * TRANSCRIBE_MODEL, the user is told voice is not supported; and in groups
 * each user message carries its speaker's name.
 */
import { UsageStore } from "../../src/store/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { DiscordAdapter } from "../../adapters/discord/index.js";
import { SlackAdapter } from "../../adapters/slack/index.js";
import { TelegramAdapter } from "../../adapters/telegram/index.js";
import type { App } from "../../src/gateway/app.js";
import { FakeDiscord } from "../fakes/discord.js";
import { FakeOpenAi, textReply } from "../fakes/openai.js";
import { FakeSlack } from "../fakes/slack.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { eventually, startApp } from "../support/app.js";
import { capturedLogger } from "../reliability/helpers.js";
import { unmarked } from "../support/notices.js";
import { prisma } from "../support/prisma.js";

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52]), Buffer.alloc(200, 7)]);
const OGG = Buffer.concat([Buffer.from("OggS\0\x02", "binary"), Buffer.alloc(300, 1)]);
const dataUrl = (b: Buffer, type = "image/png") => `data:${type};base64,${b.toString("base64")}`;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function model(): Promise<FakeOpenAi> {
  const ai = await FakeOpenAi.start();
  cleanups.push(() => ai.close());
  return ai;
}
const modelEnv = (ai: FakeOpenAi, extra: Record<string, string> = {}) => ({
  OPENAI_BASE_URL: ai.baseUrl,
  OPENAI_MODEL: "fake-model",
  OPENAI_API_KEY: "sk-test-media-key",
  ...extra,
});

async function telegram(env: Record<string, string>) {
  const tg = new FakeTelegram();
  await tg.start();
  cleanups.push(() => tg.close());
  const adapter = new TelegramAdapter({ token: tg.token, apiRoot: tg.apiRoot, mode: "polling", pollingTimeoutSec: 1 });
  const { app } = await startApp("sqlite", [adapter], env);
  cleanups.push(() => app.stop());
  const alice = tg.user("Alice");
  return { tg, app, alice, dm: tg.privateChat(alice) };
}

async function handled(app: App, n: number): Promise<void> {
  await eventually(
    async () => prisma(app.db).read((db) => db.inboundEvent.count({ where: { status: "done" } })),
    (c) => c >= n,
    15_000,
    `${n} events handled`,
  );
}

/** The last user message of the model's nth request. */
const lastUser = (ai: FakeOpenAi, n = 0) =>
  (ai.requests[n]!.body.messages as Array<{ role: string; content: unknown; name?: string }>).filter((m) => m.role === "user").at(-1)!;

describe("images reach a vision model as image parts (MODEL_VISION=true)", () => {
  it("Telegram (grammY): a photo is fetched through getFile and sent as a data: URL image part beside its caption", async () => {
    const ai = await model();
    ai.enqueue(textReply(["A test pattern."]));
    const { tg, app, alice, dm } = await telegram(modelEnv(ai, { MODEL_VISION: "true" }));
    tg.photo({ chat: dm, from: alice, caption: "what is this?", data: PNG });
    await eventually(
      () => tg.sent({ chatId: dm.id }).map((m) => unmarked(m.text)),
      (t) => t.includes("A test pattern."),
      15_000,
      "the answer",
    );
    const content = lastUser(ai).content as Array<Record<string, unknown>>;
    expect(content[0]).toEqual({ type: "text", text: expect.stringMatching(/^what is this\?\n\[photo attached: .*216 bytes\]$/) });
    expect(content[1]).toEqual({ type: "image_url", image_url: { url: dataUrl(PNG) } });
    expect(content).toHaveLength(2);
    expect(tg.fileDownloads).toEqual([{ path: expect.stringMatching(/^jpgs\/file_\d+\.jpg$/), status: 200 }]);
    // The transcript keeps the text and the description, not the bytes.
    const rows = await prisma(app.db).read((db) => db.message.findMany({ where: { role: "user" } }));
    expect(rows.map((r) => r.content)).toEqual([content[0]!.text]);
  });

  it("Telegram: an image over IMAGE_MAX_BYTES gets a polite reply and is never downloaded; alone, it does not reach the model", async () => {
    const ai = await model();
    const { tg, app, alice, dm } = await telegram(modelEnv(ai, { MODEL_VISION: "true", IMAGE_MAX_BYTES: "4096" }));
    tg.photo({ chat: dm, from: alice, data: Buffer.concat([PNG, Buffer.alloc(10_000)]) });
    const [reply] = await eventually(
      () => tg.sent({ chatId: dm.id }).map((m) => unmarked(m.text)),
      (t) => t.length >= 1,
      15_000,
      "the reply",
    );
    expect(reply).toBe("That image is too large for me to look at (10 KB); the limit is 4 KB. Please send a smaller one.");
    await handled(app, 1);
    expect(ai.requests).toHaveLength(0);
    // getFile reported the size: no byte of it was fetched.
    expect(tg.callsTo("getFile")).toHaveLength(1);
    expect(tg.fileDownloads).toHaveLength(0);
  });

  it("Telegram: a 'photo' whose bytes are not an image is refused by its content, whatever the platform says; the caption is still answered", async () => {
    const ai = await model();
    ai.enqueue(textReply(["Sorry, no picture came through."]));
    const { tg, alice, dm } = await telegram(modelEnv(ai, { MODEL_VISION: "true" }));
    tg.photo({ chat: dm, from: alice, caption: "see?", data: Buffer.from("<html><body>not a picture</body></html>") });
    const replies = await eventually(
      () => tg.sent({ chatId: dm.id }).map((m) => unmarked(m.text)),
      (t) => t.length >= 2,
      15_000,
      "two replies",
    );
    expect(replies).toContain("I couldn't look at that image: it is not a JPEG, PNG, GIF or WebP picture.");
    expect(replies).toContain("Sorry, no picture came through.");
    expect(typeof lastUser(ai).content).toBe("string");
  });

  it("MODEL_VISION=false: the photo is described as text, nothing is downloaded", async () => {
    const ai = await model();
    ai.enqueue(textReply(["ok"]));
    const { tg, alice, dm } = await telegram(modelEnv(ai));
    tg.photo({ chat: dm, from: alice, caption: "look", data: PNG });
    await eventually(
      () => tg.sent({ chatId: dm.id }).length,
      (n) => n >= 1,
      15_000,
      "the answer",
    );
    expect(lastUser(ai).content).toMatch(/^look\n\[photo attached: .*216 bytes\]$/);
    expect(tg.callsTo("getFile")).toHaveLength(0);
    expect(tg.fileDownloads).toHaveLength(0);
  });

  it("Discord (discord.js): an attachment is fetched from the signed CDN URL (no token sent) and sent as an image part", async () => {
    const ai = await model();
    ai.enqueue(textReply(["Nice picture."]));
    const dc = new FakeDiscord();
    await dc.start();
    cleanups.push(() => dc.close());
    const alice = dc.user("alice");
    const adapter = new DiscordAdapter({ token: dc.token, apiUrl: dc.apiUrl });
    const { app } = await startApp("sqlite", [adapter], modelEnv(ai, { MODEL_VISION: "true" }));
    cleanups.push(() => app.stop());
    const dm = dc.dmChannel(alice);
    dc.userMessage({ channel: dm, author: alice, content: "", attachments: [{ filename: "cat.png", content_type: "image/png", data: PNG }] });
    await eventually(
      () => dc.sent({ channelId: dm.id }).map((m) => unmarked(m.content)),
      (t) => t.includes("Nice picture."),
      15_000,
      "the answer",
    );
    expect(lastUser(ai).content).toEqual([
      { type: "text", text: "[photo attached: cat.png, image/png, 216 bytes]" },
      { type: "image_url", image_url: { url: dataUrl(PNG) } },
    ]);
    expect(dc.cdn.downloads.map((d) => [d.status, d.authorization])).toEqual([[200, undefined]]);
  });

  it("Slack (Bolt): url_private is fetched with the bot token; without files:read Slack redirects to sign-in, which is refused with a polite reply", async () => {
    const ai = await model();
    ai.enqueue(textReply(["I see a file."]), textReply(["Only text then."]));
    const sl = new FakeSlack();
    await sl.start();
    cleanups.push(() => sl.close());
    const adapter = new SlackAdapter({ botToken: sl.botToken, signingSecret: sl.signingSecret, apiUrl: sl.apiUrl });
    const { app, url } = await startApp("sqlite", [adapter], modelEnv(ai, { MODEL_VISION: "true" }));
    cleanups.push(() => app.stop());
    const channel = "D0MEDIA01";
    const user = "U0MEDIA01";
    const post = async (body: object) => expect((await sl.postEvent(`${url}/slack/events`, body)).status).toBe(200);
    await post(sl.events.message({ channel, user, text: "look", extra: { files: [sl.files.add({ name: "chart.png", mimetype: "image/png", data: PNG })] } }));
    await eventually(
      () => sl.sent({ channel }).map((m) => unmarked(m.text)),
      (t) => t.includes("I see a file."),
      15_000,
      "the first answer",
    );
    expect((lastUser(ai).content as unknown[])[1]).toEqual({ type: "image_url", image_url: { url: dataUrl(PNG) } });
    expect(sl.files.downloads.map((d) => [d.status, d.authorization])).toEqual([[200, `Bearer ${sl.botToken}`]]);

    // The app was installed without files:read: Slack answers a file GET with a redirect to its sign-in page.
    sl.scopes = sl.scopes.filter((s) => s !== "files:read");
    await post(sl.events.message({ channel, user, text: "and this?", extra: { files: [sl.files.add({ name: "b.png", mimetype: "image/png", data: PNG })] } }));
    const replies = await eventually(
      () => sl.sent({ channel }).map((m) => unmarked(m.text)),
      (t) => t.length >= 3,
      15_000,
      "the second answer and the notice",
    );
    expect(replies).toContain("I couldn't download that image, so I only know that it was sent. Please try sending it again.");
    expect(replies).toContain("Only text then.");
    expect(sl.files.downloads.at(-1)!.status).toBe(302);
    expect(typeof lastUser(ai, 1).content).toBe("string");
  });
});

describe("attachments that point elsewhere", () => {
  it("Discord: an attachment URL off Discord's CDN (a forged event: cloud metadata) is never fetched; a tampered CDN signature is a 404; both answered politely", async () => {
    const ai = await model();
    ai.enqueue(textReply(["text only"]), textReply(["text only again"]));
    const dc = new FakeDiscord();
    await dc.start();
    cleanups.push(() => dc.close());
    const alice = dc.user("alice");
    const adapter = new DiscordAdapter({ token: dc.token, apiUrl: dc.apiUrl });
    const { app } = await startApp("sqlite", [adapter], modelEnv(ai, { MODEL_VISION: "true" }));
    cleanups.push(() => app.stop());
    const dm = dc.dmChannel(alice);
    dc.userMessage({
      channel: dm,
      author: alice,
      content: "one",
      attachments: [{ filename: "x.png", content_type: "image/png", url: "http://169.254.169.254/latest/meta-data/x.png" }],
    });
    await eventually(
      () => dc.sent({ channelId: dm.id }).length,
      (n) => n >= 2,
      15_000,
      "the first answer and notice",
    );
    const signed = dc.cdn.add(dm.id, "1", "y.png", PNG, "image/png");
    dc.userMessage({
      channel: dm,
      author: alice,
      content: "two",
      attachments: [{ filename: "y.png", content_type: "image/png", url: signed.replace(/hm=[0-9a-f]+/, "hm=00") }],
    });
    const replies = await eventually(
      () => dc.sent({ channelId: dm.id }).map((m) => unmarked(m.content)),
      (t) => t.length >= 4,
      15_000,
      "the second answer and notice",
    );
    expect(replies.filter((t) => t.startsWith("I couldn't download that image"))).toHaveLength(2);
    expect(dc.cdn.downloads.map((d) => d.status)).toEqual([404]);
    expect(ai.requests.map((r) => typeof (r.body.messages as Array<{ content: unknown }>).at(-1)!.content)).toEqual(["string", "string"]);
  });

  it("Discord: a voice message (flags + waveform) is transcribed from the CDN", async () => {
    const ai = await model();
    ai.transcripts.push("see you at noon");
    ai.enqueue(textReply(["Noon it is."]));
    const dc = new FakeDiscord();
    await dc.start();
    cleanups.push(() => dc.close());
    const alice = dc.user("alice");
    const adapter = new DiscordAdapter({ token: dc.token, apiUrl: dc.apiUrl });
    const { app } = await startApp("sqlite", [adapter], modelEnv(ai, { TRANSCRIBE_MODEL: "whisper-1" }));
    cleanups.push(() => app.stop());
    const dm = dc.dmChannel(alice);
    dc.userMessage({
      channel: dm,
      author: alice,
      content: "",
      attachments: [{ filename: "voice-message.ogg", content_type: "audio/ogg", data: OGG, waveform: "AAAA", duration_secs: 2 }],
      extra: { flags: 8192 },
    });
    await eventually(
      () => dc.sent({ channelId: dm.id }).map((m) => unmarked(m.content)),
      (t) => t.includes("Noon it is."),
      15_000,
      "the answer",
    );
    expect(ai.transcriptions[0]!.file!.data.equals(OGG)).toBe(true);
    expect((ai.requests[0]!.body.messages as Array<{ role: string; content: string }>).at(-1)!.content).toBe("[voice note, transcribed]: see you at noon");
  });
});

describe("voice notes (TRANSCRIBE_MODEL)", () => {
  it("Telegram: a voice note is transcribed through /audio/transcriptions and reaches the agent as transcribed text", async () => {
    const ai = await model();
    ai.transcripts.push("remind me to buy milk");
    ai.enqueue(textReply(["Noted: milk."]));
    const { tg, app, alice, dm } = await telegram(modelEnv(ai, { TRANSCRIBE_MODEL: "whisper-1" }));
    tg.voice({ chat: dm, from: alice, data: OGG, duration: 2 });
    await eventually(
      () => tg.sent({ chatId: dm.id }).map((m) => unmarked(m.text)),
      (t) => t.includes("Noted: milk."),
      15_000,
      "the answer",
    );
    expect(ai.transcriptions).toHaveLength(1);
    const t = ai.transcriptions[0]!;
    expect([t.model, t.responseFormat, t.file?.name, t.file?.type]).toEqual(["whisper-1", "json", "voice.ogg", "audio/ogg"]);
    expect(t.file!.data.equals(OGG)).toBe(true);
    expect(t.headers.authorization).toBe("Bearer sk-test-media-key");
    expect(lastUser(ai).content).toBe("[voice note, transcribed]: remind me to buy milk");
    const rows = await prisma(app.db).read((db) => db.message.findMany({ where: { role: "user" } }));
    expect(rows.map((r) => r.content)).toEqual(["[voice note, transcribed]: remind me to buy milk"]);
    // The transcription is a metered call of its own (issue 29), counted by the transcript's tokens, beside the turn's.
    const usage = await new UsageStore(app.db).recent(10);
    expect(usage.map((u) => [u.kind, u.model, u.estimated]).sort()).toEqual([
      ["transcription", "whisper-1", true],
      ["turn", expect.any(String), expect.any(Boolean)],
    ]);
    expect(usage.find((u) => u.kind === "transcription")!.completionTokens).toBeGreaterThan(0);
  });

  it("Slack: an audio clip (slack_audio, WebM) is fetched with the bot token and transcribed", async () => {
    const ai = await model();
    ai.transcripts.push("ship it");
    ai.enqueue(textReply(["Shipping."]));
    const sl = new FakeSlack();
    await sl.start();
    cleanups.push(() => sl.close());
    const adapter = new SlackAdapter({ botToken: sl.botToken, signingSecret: sl.signingSecret, apiUrl: sl.apiUrl });
    const { app, url } = await startApp("sqlite", [adapter], modelEnv(ai, { TRANSCRIBE_MODEL: "whisper-1" }));
    cleanups.push(() => app.stop());
    const WEBM = Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3]), Buffer.alloc(100, 2)]);
    const clip = sl.files.add({ name: "audio_message.webm", mimetype: "audio/webm", data: WEBM, audioClip: true });
    await sl.postEvent(`${url}/slack/events`, sl.events.message({ channel: "D0CLIP001", user: "U0CLIP001", text: "", extra: { files: [clip] } }));
    await eventually(
      () => sl.sent({ channel: "D0CLIP001" }).map((m) => unmarked(m.text)),
      (t) => t.includes("Shipping."),
      15_000,
      "the answer",
    );
    expect([ai.transcriptions[0]!.file!.name, ai.transcriptions[0]!.file!.type, ai.transcriptions[0]!.file!.data.equals(WEBM)]).toEqual([
      "voice.webm",
      "audio/webm",
      true,
    ]);
    expect(sl.files.downloads.map((d) => [d.status, d.authorization])).toEqual([[200, `Bearer ${sl.botToken}`]]);
    expect((ai.requests[0]!.body.messages as Array<{ role: string; content: string }>).at(-1)!.content).toBe("[voice note, transcribed]: ship it");
  });

  it("without TRANSCRIBE_MODEL the user is told voice is not supported, and the model is not asked", async () => {
    const ai = await model();
    const { tg, app, alice, dm } = await telegram(modelEnv(ai));
    tg.voice({ chat: dm, from: alice, data: OGG });
    const [reply] = await eventually(
      () => tg.sent({ chatId: dm.id }).map((m) => unmarked(m.text)),
      (t) => t.length >= 1,
      15_000,
      "the reply",
    );
    expect(reply).toBe("Voice messages are not supported here, so I can't listen to your voice note. Please type your message instead.");
    await handled(app, 1);
    expect(ai.requests).toHaveLength(0);
    expect(ai.transcriptions).toHaveLength(0);
  });

  it("a transcription server that fails gets a polite reply, never silence", async () => {
    const ai = await model();
    ai.transcripts.push({ status: 500, headers: { "content-type": "application/json" }, body: ['{"error":{"message":"boom"}}'] });
    const { tg, alice, dm } = await telegram(modelEnv(ai, { TRANSCRIBE_MODEL: "whisper-1" }));
    tg.voice({ chat: dm, from: alice, data: OGG });
    const [reply] = await eventually(
      () => tg.sent({ chatId: dm.id }).map((m) => unmarked(m.text)),
      (t) => t.length >= 1,
      15_000,
      "the reply",
    );
    expect(reply).toBe("I couldn't transcribe that voice note. Please try again, or type your message.");
  });
});

describe("who is speaking in a group", () => {
  it("Telegram: each user message reaches the model with its speaker's name; the transcript stores the speaker", async () => {
    const ai = await model();
    ai.enqueue(textReply(["Hi both."]), textReply(["Prefixed."]));
    const { tg, app, alice } = await telegram(modelEnv(ai));
    const bob = tg.user("Bob");
    const group = tg.group("Team");
    tg.userMessage({ chat: group, from: bob, text: "I like tea" });
    await handled(app, 1);
    tg.userMessage({ chat: group, from: alice, text: `@${tg.botUser.username} and I like coffee` });
    await eventually(
      () => tg.sent({ chatId: group.id }).length,
      (n) => n >= 1,
      15_000,
      "the answer",
    );
    const users = (ai.requests[0]!.body.messages as Array<{ role: string; content: string; name?: string }>).filter((m) => m.role === "user");
    expect(users.map((m) => [m.name, m.content])).toEqual([
      ["Bob", "I like tea"],
      ["Alice", expect.stringContaining("and I like coffee")],
    ]);
    const rows = await prisma(app.db).read((db) => db.message.findMany({ where: { role: "user" }, orderBy: { seq: "asc" } }));
    expect(rows.map((r) => JSON.parse(r.meta!).speaker.name)).toEqual(["Bob", "Alice"]);
  });
});

describe("downloads never leak a token", () => {
  it("failed downloads are logged with a code and the file's label, never a token or a token-bearing URL", async () => {
    const ai = await model();
    ai.enqueue(textReply(["a"]), textReply(["b"]));
    const lines: string[] = [];
    const log = capturedLogger(lines);
    const tg = new FakeTelegram();
    await tg.start();
    cleanups.push(() => tg.close());
    const sl = new FakeSlack({ scopes: FakeSlack.MANIFEST_SCOPES.filter((x) => x !== "files:read") });
    await sl.start();
    cleanups.push(() => sl.close());
    const telegramAdapter = new TelegramAdapter({ token: tg.token, apiRoot: tg.apiRoot, mode: "polling", pollingTimeoutSec: 1, log });
    const slackAdapter = new SlackAdapter({ botToken: sl.botToken, signingSecret: sl.signingSecret, apiUrl: sl.apiUrl, log });
    const { app, url } = await startApp("sqlite", [telegramAdapter, slackAdapter], { ...modelEnv(ai, { MODEL_VISION: "true" }), LOG_LEVEL: "trace" }, { log });
    cleanups.push(() => app.stop());
    const alice = tg.user("Alice");
    const dm = tg.privateChat(alice);
    tg.failNext("getFile", { status: 500 });
    tg.photo({ chat: dm, from: alice, caption: "one", data: PNG });
    await sl.postEvent(
      `${url}/slack/events`,
      sl.events.message({
        channel: "D0LEAK001",
        user: "U0LEAK001",
        text: "two",
        extra: { files: [sl.files.add({ name: "x.png", mimetype: "image/png", data: PNG })] },
      }),
    );
    await eventually(
      () => tg.sent({ chatId: dm.id }).length + sl.sent({ channel: "D0LEAK001" }).length,
      (n) => n >= 4,
      15_000,
      "answers and notices",
    );
    const failures = lines.filter((l) => l.includes("could not use an image attachment"));
    expect(failures.map((l) => JSON.parse(l).code).sort()).toEqual(["Failed", "Refused"]);
    const all = lines.join("\n");
    expect(all).not.toContain(tg.token);
    expect(all).not.toContain(tg.token.split(":")[1]!);
    expect(all).not.toContain(sl.botToken);
    expect(all).not.toContain("/file/bot");
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/switchboard_media_failures_total\{kind="image",code="Failed"\} 1/);
    expect(metrics).toMatch(/switchboard_media_failures_total\{kind="image",code="Refused"\} 1/);
  });
});
