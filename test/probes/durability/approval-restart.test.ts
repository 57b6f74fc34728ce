/**
 * Approvals across a stop and a restart on the same SQLite file, and store
 * faults at the approval's own call sites, through the real grammY adapter
 * against FakeTelegram. The promise (DESIGN "Tools, policies and
 * approvals", "Durability"): a graceful stop abandons a turn waiting on a
 * person (it commits nothing and is replayed at the next start), its row is
 * expired and its card edited, so nothing is left hanging; the replayed turn
 * asks again, and the question is answered exactly once.
 */
import { afterEach, describe, expect, it } from "vitest";
import { TelegramAdapter } from "../../../adapters/telegram/index.js";
import type { App } from "../../../src/gateway/app.js";
import type { FakeOpenAi } from "../../fakes/openai.js";
import { FakeTelegram, type TgChat, type TgMessage, type TgUser } from "../../fakes/telegram.js";
import { eventually } from "../../support/app.js";
import { startAppOn } from "../../support/app-on.js";
import { clockAgent } from "../../support/clock-agent.js";
import { freshMigratedSqliteUrl } from "../../support/db.js";
import { FaultPlan } from "../../support/faults.js";

const CLOCK = "use the clock";
const CARD = /The agent wants to use the tool/;
const ANSWER = /the tool said: UTC:/;

let fake: FakeTelegram | undefined;
let model: FakeOpenAi | undefined;
const apps: App[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.stop().catch(() => undefined);
  await fake?.close();
  fake = undefined;
  await model?.close();
  model = undefined;
});

async function gateway(url: string, agentFactory: unknown, faults?: FaultPlan): Promise<App> {
  const adapter = new TelegramAdapter({ token: fake!.token, apiRoot: fake!.apiRoot, mode: "polling", pollingTimeoutSec: 1 });
  const { app } = await startAppOn(
    url,
    [adapter],
    { APPROVERS: "anyone", REFLECT_EVERY_TURNS: "0" },
    { agentFactory: agentFactory as never, mcpConfig: { servers: [], builtinTools: { current_time: { policy: "ask" } } }, ...(faults && { faults }) },
  );
  apps.push(app);
  return app;
}

const said = (chat: TgChat) => fake!.sent({ chatId: chat.id });
const count = (chat: TgChat, re: RegExp) => said(chat).filter((s) => re.test(s.text)).length;
const waitCount = (chat: TgChat, re: RegExp, n: number, what: string) =>
  eventually(
    () => count(chat, re),
    (c) => c >= n,
    20_000,
    what,
  );

function buttonOf(msg: TgMessage, action: "approve" | "always" | "deny"): string {
  return (msg.reply_markup as { inline_keyboard: Array<Array<{ callback_data: string }>> }).inline_keyboard
    .flat()
    .find((b) => b.callback_data.startsWith(`approval:${action}:`))!.callback_data;
}

function press(from: TgUser, msg: TgMessage, action: "approve" | "always" | "deny", data = buttonOf(msg, action)) {
  const q = fake!.callbackQuery({ from, message: msg, data });
  return eventually(() => fake!.callbackAnswer(q.callback_query!.id), Boolean, 20_000, `the answer to the ${action} press`);
}

const approvals = (app: App) => app.db.query("probe-approvals", app.db.q.selectFrom("Approval").select(["id", "status", "cardMessageId"]).orderBy("createdAt"));

/** A fresh fake Telegram, and a gateway on a new SQLite file with the clock tool under `ask`, its store faults planned by the test; Alice's private chat. */
async function faultyGateway(): Promise<{ app: App; faults: FaultPlan; alice: TgUser; chat: TgChat }> {
  fake = new FakeTelegram();
  await fake!.start();
  const clock = await clockAgent(CLOCK, "probe");
  model = clock.model;
  const faults = new FaultPlan();
  const app = await gateway(await freshMigratedSqliteUrl(), clock.agentFactory, faults);
  const alice = fake!.user("Alice");
  return { app, faults, alice, chat: fake!.privateChat(alice) };
}

/** Alice asks for the clock: the card as it was shown (a copy, which later edits leave alone), its row, and its approve button. */
async function cardAsked(app: App, alice: TgUser, chat: TgChat) {
  fake!.userMessage({ chat, from: alice, text: CLOCK });
  await waitCount(chat, CARD, 1, "the card");
  const [row] = await eventually(
    () => approvals(app),
    (r) => r.length === 1 && !!r[0]!.cardMessageId,
    20_000,
    "the card's row",
  );
  const card = structuredClone(fake!.message(chat.id, Number(row!.cardMessageId))!);
  return { row: row!, card, approve: buttonOf(card, "approve") };
}

describe("approvals across a stop and a restart on the same database", () => {
  it("a stop while an approval waits: the row is expired and its card edited; after the restart the question is asked again and answered exactly once", async () => {
    fake = new FakeTelegram();
    await fake!.start();
    const clock = await clockAgent(CLOCK, "probe");
    model = clock.model;
    const url = await freshMigratedSqliteUrl();
    const alice = fake!.user("Alice");
    const chat = fake!.privateChat(alice);

    const first = await gateway(url, clock.agentFactory);
    fake!.userMessage({ chat, from: alice, text: CLOCK });
    await waitCount(chat, CARD, 1, "the first card");
    const [row1] = await eventually(
      () => approvals(first),
      (r) => r.length === 1 && !!r[0]!.cardMessageId,
      20_000,
      "the first card's row",
    );
    const oldCard = structuredClone(fake!.message(chat.id, Number(row1!.cardMessageId))!);
    const oldApprove = buttonOf(oldCard, "approve");

    // The graceful stop does not wait the grace for a person.
    await first.stop({ graceMs: 30_000 });
    apps.length = 0;
    expect((await approvals(first).catch(() => undefined)) ?? "closed").toBeDefined();

    const second = await gateway(url, clock.agentFactory);
    const rows = await approvals(second);
    expect(rows.find((r) => r.id === row1!.id)?.status).toBe("expired");
    // The old card no longer offers its buttons as if it were live: it was edited.
    const oldSent = said(chat).find((s) => s.messageId === Number(row1!.cardMessageId))!;
    expect(oldSent.history.length).toBeGreaterThan(1);

    // The replayed turn asks again: a second card.
    await waitCount(chat, CARD, 2, "the card of the replayed turn");
    const [, row2] = await eventually(
      () => approvals(second),
      (r) => r.length === 2 && !!r[1]!.cardMessageId,
      20_000,
      "the second card's row",
    );
    // A press on the old card is told it expired with the restart; it resumes nothing.
    const late = await press(alice, oldCard, "approve", oldApprove);
    expect(late!.text).toMatch(/expired/i);
    await press(alice, fake!.message(chat.id, Number(row2!.cardMessageId))!, "approve");
    await waitCount(chat, ANSWER, 1, "the answer");

    await second.stop({ graceMs: 30_000 });
    apps.length = 0;
    expect(count(chat, ANSWER)).toBe(1);
    const final = await approvals(second).catch(() => undefined);
    expect(final === undefined || final.every((r) => r.status !== "pending")).toBe(true);
  }, 90_000);

  it("a store fault noting where the card is (approval-card): the card still works, an approve press runs the call once", async () => {
    const { app, faults, alice, chat } = await faultyGateway();
    faults.once("approval-card", "SQLITE_FULL");
    fake!.userMessage({ chat, from: alice, text: CLOCK });
    await waitCount(chat, CARD, 1, "the card");
    await eventually(
      () => faults.injected.get("approval-card") ?? 0,
      (n) => n === 1,
      20_000,
      "the fault",
    );
    const card = said(chat).find((s) => CARD.test(s.text))!;
    const msg = await eventually(
      () => fake!.message(chat.id, card.messageId),
      (m) => !!m?.reply_markup,
      20_000,
      "the card's buttons",
    );
    expect((await press(alice, msg!, "approve"))!.text).toMatch(/^Approved/);
    await waitCount(chat, ANSWER, 1, "the answer");
    await app.gateway.idle();
    expect((await approvals(app)).map((r) => r.status)).toEqual(["approved"]);
    await app.stop({ graceMs: 30_000 });
    apps.length = 0;
    expect(count(chat, ANSWER)).toBe(1);
    expect(said(chat).filter((s) => /could not be shown/.test(s.text))).toEqual([]);
  }, 60_000);

  for (const site of ["approval-create"]) {
    it(`a store fault at ${site}: the call is denied, told in the chat once, and nothing is left pending`, async () => {
      const { app, faults, alice, chat } = await faultyGateway();
      faults.once(site, "SQLITE_FULL");
      fake!.userMessage({ chat, from: alice, text: CLOCK });
      await waitCount(chat, /the tool said/, 1, `the turn's answer after the fault at ${site}`);
      await app.gateway.idle();
      expect(faults.injected.get(site)).toBe(1);
      expect((await approvals(app)).filter((r) => r.status === "pending")).toEqual([]);
      // No live buttons left in the chat.
      expect(said(chat).filter((s) => CARD.test(s.text) && fake!.message(chat.id, s.messageId)?.reply_markup)).toEqual([]);
      await app.stop({ graceMs: 30_000 });
      apps.length = 0;
      expect(count(chat, /the tool said/)).toBe(1);
    }, 60_000);
  }

  it("a store fault when an approve press is recorded: the call is denied, and the card does not later claim 'Approved.' for a call that never ran", async () => {
    const { app, faults, alice, chat } = await faultyGateway();
    const { row, card, approve } = await cardAsked(app, alice, chat);
    faults.once("approval-decide", "SQLITE_FULL");
    const first = await press(alice, card, "approve", approve);
    // The turn goes on without the call (fail closed): it was not run.
    await waitCount(chat, /the tool said: denied/, 1, "the turn's answer");
    await app.gateway.idle();
    // The card offers no live buttons any more: nothing waits on them.
    expect(fake!.message(chat.id, Number(row!.cardMessageId))?.reply_markup).toBeUndefined();
    // The press that could not be recorded was not told it was approved.
    expect(first!.text).not.toMatch(/^Approved/);
    // Pressed again: nothing waits for this approval any more, so it must not say "Approved." (nothing would run).
    const again = await press(alice, card, "approve", approve);
    expect(again!.text).not.toMatch(/^Approved/);
    expect(count(chat, ANSWER)).toBe(0);
    // Nothing is left pending while the process runs.
    expect((await approvals(app)).map((r) => r.status)).not.toContain("pending");
    await app.stop({ graceMs: 30_000 });
    apps.length = 0;
  }, 60_000);

  it("a store fault when a press is read (approval-get): the presser is asked to try again, the card stays live, the next press decides once", async () => {
    const { app, faults, alice, chat } = await faultyGateway();
    const { row, card, approve } = await cardAsked(app, alice, chat);
    faults.once("approval-get", "SQLITE_FULL");
    const first = await press(alice, card, "approve", approve);
    expect(first!.text).toMatch(/try again/);
    expect(fake!.message(chat.id, Number(row!.cardMessageId))?.reply_markup).toBeDefined();
    const second = await press(alice, card, "approve", approve);
    expect(second!.text).toMatch(/^Approved/);
    await waitCount(chat, ANSWER, 1, "the answer");
    await app.gateway.idle();
    expect((await approvals(app)).map((r) => r.status)).toEqual(["approved"]);
    await app.stop({ graceMs: 30_000 });
    apps.length = 0;
    expect(count(chat, ANSWER)).toBe(1);
  }, 60_000);
});
