import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TelegramAdapter } from "../../../adapters/telegram/index.js";
import type { App } from "../../../src/gateway/app.js";
import type { FakeOpenAi } from "../../fakes/openai.js";
import { clockAgent } from "../../support/clock-agent.js";
import { FakeTelegram, type TgMessage, type TgUser } from "../../fakes/telegram.js";
import { eventually, startApp } from "../../support/app.js";

/**
 * Approval cards leave through the outbound door like any reply (issue 27,
 * acceptance 1): over the real grammY adapter against the Telegram fake, a
 * 429 with retry_after on the card's send and on its edit is waited out, the
 * card keeps its place in the chat's order, and the approval completes. A
 * card the platform refuses ends the approval, told to the model and the chat.
 */

const CLOCK = "use the clock";
const CARD = /^The agent wants to use the tool/;
const hasButtons = (p: Record<string, unknown>) => p.reply_markup !== undefined;

describe("approval cards through the outbound door (telegram, grammY)", () => {
  let app: App;
  let tg: FakeTelegram;
  let model: FakeOpenAi;
  let n = 0;

  beforeAll(async () => {
    tg = new FakeTelegram();
    await tg.start();
    let agentFactory: unknown;
    ({ model, agentFactory } = await clockAgent(CLOCK, "card-test"));
    const adapter = new TelegramAdapter({ token: tg.token, apiRoot: tg.apiRoot, mode: "polling", pollingTimeoutSec: 1 });
    ({ app } = await startApp(
      "sqlite",
      [adapter],
      { DM_POLICY: "open" },
      { agentFactory: agentFactory as never, mcpConfig: { servers: [], builtinTools: { current_time: { policy: "ask" } } } },
    ));
  });
  afterAll(async () => {
    await app?.stop();
    await tg?.close();
    await model?.close();
  });

  const dm = () => {
    const user = tg.user(`card${n++}`);
    return { user, chat: tg.privateChat(user) };
  };
  const say = (w: { user: TgUser; chat: { id: number } }, text: string) => tg.userMessage({ chat: w.chat as never, from: w.user, text });
  const shown = (chatId: number) => tg.sent({ chatId }).map((s) => s.text);
  const cardOf = (chatId: number) => tg.sent({ chatId }).find((s) => CARD.test(s.text));

  it("a 429 on the card's send and on its edit is waited out: the card comes after the reply before it, and the approval completes", async () => {
    const w = dm();
    // The reply before the card and the card itself each get one 429 (retry after 1 s); so does the card's edit.
    tg.rateLimitNext("sendMessage", 1, 1, (p) => !hasButtons(p));
    tg.rateLimitNext("sendMessage", 1, 1, hasButtons);
    tg.rateLimitNext("editMessageText", 1, 1);
    say(w, "first");
    // The first reply waits out its 429 while the next message's turn asks for approval: the card must not overtake it.
    await eventually(
      () => tg.callsTo("sendMessage").filter((c) => c.status === 429).length,
      (k) => k >= 1,
      10_000,
      "the first reply's 429",
    );
    say(w, `${CLOCK} please`);
    const card = await eventually(
      () => cardOf(w.chat.id),
      (c) => c !== undefined,
      15_000,
      "the approval card, after its 429",
    );
    expect(shown(w.chat.id).slice(0, 2)).toEqual(["echo: first", card!.text]);
    expect(tg.callsTo("sendMessage").filter((c) => c.status === 429 && hasButtons(c.params))).toHaveLength(1);

    const msg = tg.message(w.chat.id, card!.messageId) as TgMessage;
    const data = ((msg.reply_markup as { inline_keyboard: Array<Array<{ callback_data: string }>> }).inline_keyboard.flat() ?? [])
      .map((b) => b.callback_data)
      .find((d) => d.startsWith("approval:approve:"))!;
    tg.callbackQuery({ from: w.user, message: msg, data });
    const answer = await eventually(
      () => shown(w.chat.id).find((t) => t.includes("the tool said")),
      (t) => t !== undefined,
      15_000,
      "the answer after the tool ran",
    );
    expect(answer).toMatch(/the tool said: UTC: \d{4}-\d\d-\d\dT/);
    const edited = await eventually(
      () => tg.message(w.chat.id, card!.messageId),
      (m) => /Approved by/.test(m?.text ?? ""),
      10_000,
      "the card edited to approved, after its 429",
    );
    expect(edited!.reply_markup).toBeUndefined();
    const edits = tg.callsTo("editMessageText").filter((c) => Number(c.params.message_id) === card!.messageId);
    expect(edits.map((c) => c.status)).toEqual([429, 200]);
    // The edit was queued when the click decided, before the answer: the answer waited behind its 429.
    const answerSent = tg.calls.findIndex((c) => c.method === "sendMessage" && c.status === 200 && String(c.params.text).includes("the tool said"));
    expect(answerSent).toBeGreaterThan(tg.calls.indexOf(edits[1]!));
  });

  it("a card the platform refuses ends the approval: the model is told the card could not be shown, and the chat gets a notice", async () => {
    const w = dm();
    tg.failNext("sendMessage", { status: 400, description: "Bad Request: BUTTON_DATA_INVALID", when: hasButtons });
    say(w, `${CLOCK} now`);
    const texts = await eventually(
      () => shown(w.chat.id),
      (t) => t.some((x) => x.includes("the tool said")),
      15_000,
      "the model's answer to the denied call",
    );
    expect(texts.some((t) => CARD.test(t))).toBe(false);
    const notice = texts.findIndex((t) => /approval card for the tool current_time .* could not be shown here, so the call was denied/.test(t));
    expect(notice).toBeGreaterThanOrEqual(0);
    // The tool did not run: the model got the denial, with the card's failure as its reason.
    const said = texts.find((t) => t.includes("the tool said"))!;
    expect(said).toContain("denied by approval policy");
    expect(said).toMatch(/the card could not be shown/);
    expect(said).not.toMatch(/UTC: \d{4}/);
  });
});

describe("an approval card with its arguments in parts (telegram, grammY)", () => {
  it("a 429 on a part and on the card retries that message alone: every part shown once, in order, then the card", async () => {
    const tg = new FakeTelegram();
    await tg.start();
    // 9,000 characters of arguments: more than one Telegram message holds, so they go first in parts.
    const long = JSON.stringify({ timezone: "UTC", note: "x".repeat(9000) });
    const { model, agentFactory } = await clockAgent(CLOCK, "card-parts-test", long);
    const adapter = new TelegramAdapter({ token: tg.token, apiRoot: tg.apiRoot, mode: "polling", pollingTimeoutSec: 1 });
    const { app } = await startApp(
      "sqlite",
      [adapter],
      { DM_POLICY: "open" },
      { agentFactory: agentFactory as never, mcpConfig: { servers: [], builtinTools: { current_time: { policy: "ask" } } } },
    );
    try {
      const user = tg.user("parts");
      const chat = tg.privateChat(user);
      const isPart = (p: Record<string, unknown>) => !hasButtons(p) && String(p.text).includes("<pre>");
      let partCalls = 0;
      tg.rateLimitNext("sendMessage", 1, 1, (p) => isPart(p) && ++partCalls === 2);
      tg.rateLimitNext("sendMessage", 1, 1, hasButtons);
      tg.userMessage({ chat: chat as never, from: user, text: CLOCK });
      await eventually(
        () => tg.sent({ chatId: chat.id }).find((s) => CARD.test(s.text)),
        (c) => c !== undefined,
        20_000,
        "the card, after the parts",
      );
      const ok = tg.callsTo("sendMessage").filter((c) => c.status === 200);
      const parts = ok.filter((c) => isPart(c.params)).map((c) => String(c.params.text));
      expect(parts.length).toBeGreaterThanOrEqual(2);
      expect(new Set(parts).size).toBe(parts.length);
      // The chat shows each part once and the card after the last one.
      const texts = tg.sent({ chatId: chat.id }).map((s) => s.text);
      expect(texts.filter((t) => !CARD.test(t))).toHaveLength(parts.length);
      expect(CARD.test(texts.at(-1)!)).toBe(true);
      expect(tg.callsTo("sendMessage").filter((c) => c.status === 429)).toHaveLength(2);
    } finally {
      await app.stop();
      await tg.close();
      await model.close();
    }
  });
});
