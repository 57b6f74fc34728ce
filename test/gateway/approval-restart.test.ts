/**
 * A restart while an approval is pending (issue 17, acceptance 2): the
 * gateway process is killed (SIGKILL) with a card waiting. After the restart
 * the old card says it expired with the restart, a press on it is answered
 * clearly (never left spinning), the message is answered again and asks anew,
 * and approving the new card resumes it to the tool's result.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAi, toolUsingModel } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { eventually } from "../support/app.js";

function start(env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", path.resolve("test/support/platform-gateway-child.ts")], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  child.stderr!.on("data", (d) => {
    err += d;
    // The children's warnings and errors say why a step did not happen; keep them in the test's output.
    process.stderr.write(`[gateway ${child.pid}] ${d}`);
  });
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (d) => /READY/.test(String(d)) && resolve(child));
    child.once("exit", (code) => reject(new Error(`gateway exited ${code} before READY: ${err.slice(0, 1500)}`)));
  });
}

describe("approvals across a restart", () => {
  const tg = new FakeTelegram();
  let model: FakeOpenAi;
  let env: Record<string, string>;
  let dbFile = "";
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    await tg.start();
    model = await FakeOpenAi.start();
    model.responder = toolUsingModel({ trigger: "use the clock", tool: "current_time", args: '{"timezone":"UTC"}' });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-approvals-"));
    const mcp = path.join(dir, "mcp.json");
    fs.writeFileSync(mcp, JSON.stringify({ mcpServers: {}, builtinTools: { current_time: "ask" } }));
    dbFile = path.join(dir, "gw.db");
    env = {
      DATABASE_URL: `file:${dbFile}`,
      HTTP_PORT: "0",
      LOG_LEVEL: "warn",
      DM_POLICY: "open",
      CONSOLE_ENABLED: "false",
      TELEGRAM_BOT_TOKEN: tg.token,
      TELEGRAM_API_ROOT: tg.apiRoot,
      OPENAI_BASE_URL: model.baseUrl,
      OPENAI_MODEL: "fake-model",
      MCP_CONFIG: mcp,
    };
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
    await model?.close();
    await tg.close();
  });

  const cards = (chatId: number) => tg.sent({ chatId }).filter((s) => s.history[0]?.includes("wants to use the tool"));
  const buttons = (chatId: number, messageId: number) =>
    ((tg.message(chatId, messageId)?.reply_markup as { inline_keyboard?: Array<Array<{ callback_data?: string }>> } | undefined)?.inline_keyboard ?? []).flat();

  it("killed with a card pending: the old card expires and says so, a press on it is answered, the message asks again and resumes on approval", async () => {
    const alice = tg.user("Alice");
    const chat = tg.privateChat(alice);
    children.push(await start(env));
    tg.userMessage({ chat, from: alice, text: "use the clock please" });
    const [first] = await eventually(
      () => cards(chat.id),
      (c) => c.length >= 1,
      20_000,
      "the first card",
    );
    const approveOld = buttons(chat.id, first!.messageId).find((b) => b.callback_data?.startsWith("approval:approve:"))!.callback_data!;

    // Killed once the card's message id is recorded with the approval (a crash between showing the card and
    // recording its id leaves that one card unedited; a press on it is still answered, as below).
    const db = new Database(dbFile, { readonly: true, fileMustExist: true });
    try {
      await eventually(
        () => db.prepare(`SELECT "cardMessageId" FROM "Approval"`).all() as Array<{ cardMessageId: string | null }>,
        (r) => r.length === 1 && r[0]!.cardMessageId === String(first!.messageId),
        20_000,
        "the card recorded",
      );
    } finally {
      db.close();
    }
    children[0]!.kill("SIGKILL");
    await new Promise((r) => children[0]!.once("exit", r));
    children.push(await start(env));

    // The previous run's card is edited: expired with the restart, no buttons.
    await eventually(
      () => tg.message(chat.id, first!.messageId),
      (m) => /Expired: the gateway restarted/.test(m?.text ?? "") && !m?.reply_markup,
      20_000,
      "the old card expired",
    );
    // A press that was already on its way (the keyboard was still on the user's screen) gets a clear answer.
    const late = tg.callbackQuery({ from: alice, message: tg.message(chat.id, first!.messageId)!, data: approveOld });
    const answer = await eventually(
      () => tg.callbackAnswer(late.callback_query!.id),
      (a) => a !== undefined,
      20_000,
      "the answer to the late press",
    );
    expect(String(answer!.text)).toMatch(/expired/i);
    expect(answer!.show_alert).toBe(true);

    // The message was replayed after the restart and asks again; approving resumes it to the tool's result.
    const [, second] = await eventually(
      () => cards(chat.id),
      (c) => c.length >= 2,
      20_000,
      "the second card",
    );
    const approveNew = buttons(chat.id, second!.messageId).find((b) => b.callback_data?.startsWith("approval:approve:"))!.callback_data!;
    tg.callbackQuery({ from: alice, message: tg.message(chat.id, second!.messageId)!, data: approveNew });
    const reply = await eventually(
      () => tg.sent({ chatId: chat.id }).filter((s) => s.text.includes("the tool said")),
      (r) => r.length >= 1,
      20_000,
      "the answer",
    );
    expect(reply[0]!.text).toMatch(/the tool said: UTC: \d{4}-/);
    expect(reply).toHaveLength(1);
  }, 90_000);
});
