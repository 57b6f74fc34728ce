import { afterEach, describe, expect, it } from "vitest";
import { telegramFormat } from "../../adapters/telegram/format.js";
import { TelegramAdapter } from "../../adapters/telegram/index.js";
import type { ReplyFormat } from "../../adapters/types.js";
import type { App } from "../../src/gateway/app.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { eventually, startApp } from "../support/app.js";

/**
 * A rendering failure never loses a reply (issue 26, item 7): whatever the
 * adapter's render throws, the gateway's one render call (chunksOf) sends the
 * text as written instead; a reply that cannot be formatted even so is
 * failed at once (recorded, logged, counted) and the chat is told, never
 * retried until it expires. Through the real Telegram adapter and SDK against
 * the fake, with the adapter's format made to throw as marked did on 4,000
 * nested quotes.
 */
describe("a rendering failure never loses a reply", () => {
  const apps: App[] = [];
  const fakes: FakeTelegram[] = [];
  afterEach(async () => {
    for (const a of apps.splice(0)) await a.stop().catch(() => undefined);
    for (const f of fakes.splice(0)) await f.close();
  });
  const metric = async (url: string, line: string) => (await (await fetch(`${url}/metrics`)).text()).split("\n").find((l) => l.startsWith(line));
  const overflow = () => {
    throw new RangeError("Maximum call stack size exceeded");
  };

  async function start(format: ReplyFormat) {
    const fake = new FakeTelegram();
    await fake.start();
    fakes.push(fake);
    const adapter = new TelegramAdapter({ token: fake.token, apiRoot: fake.apiRoot, pollingTimeoutSec: 1 });
    Object.defineProperty(adapter, "format", { value: format });
    const { app, url } = await startApp("sqlite", [adapter]);
    apps.push(app);
    const alice = fake.user("Alice");
    return { fake, app, url, alice, dm: fake.privateChat(alice) };
  }

  it("a render that throws sends the reply as written, escaped for the platform; logged and counted", async () => {
    const { fake, url, alice, dm } = await start({ ...telegramFormat, chunks: overflow });
    fake.userMessage({ chat: dm, from: alice, text: "**bold** <b> & more" });
    const [sent] = await eventually(
      () => fake.sent({ chatId: dm.id }),
      (s) => s.length === 1,
      15_000,
      "the reply, as written",
    );
    // Sent as HTML the fake parsed: the markers shown as typed, the tag and ampersand escaped, never parsed.
    expect(sent!.text).toBe("echo: **bold** <b> & more");
    expect(sent!.rawText).toBe("echo: **bold** &lt;b&gt; &amp; more");
    expect(await metric(url, 'switchboard_outbound_total{platform="telegram",call="render",outcome="literal"}')).toMatch(/ 1$/);
  });

  it("a reply that cannot be formatted at all is failed at once, recorded, counted and explained to the chat", async () => {
    const { fake, app, url, alice, dm } = await start({ ...telegramFormat, chunks: overflow, literal: overflow });
    fake.userMessage({ chat: dm, from: alice, text: "anything" });
    const [notice] = await eventually(
      () => fake.sent({ chatId: dm.id }),
      (s) => s.length === 1,
      15_000,
      "the notice about the reply",
    );
    expect(notice!.text).toMatch(/^A reply could not be shown here: it could not be formatted for this chat \(ref .+\)/);
    const rows = await eventually(
      () => app.db.query("test-failed", app.db.q.selectFrom("OutboundDelivery").select(["status", "lastError", "attempts"])),
      (r) => r.length === 1 && r[0]!.status === "failed",
      15_000,
      "the delivery marked failed",
    );
    expect(rows[0]!.lastError).toMatch(/could not be formatted for telegram.*Maximum call stack size exceeded/);
    expect(rows[0]!.attempts).toBe(0);
    expect(await metric(url, 'switchboard_outbound_total{platform="telegram",call="render",outcome="failed"}')).toMatch(/ 1$/);
    // Never taken for a send that may be retried: it was failed before any platform call.
    expect(await metric(url, 'switchboard_outbound_total{platform="telegram",call="send",outcome="error"}')).toBeUndefined();
    expect(fake.sent({ chatId: dm.id })).toHaveLength(1);
  });
});
