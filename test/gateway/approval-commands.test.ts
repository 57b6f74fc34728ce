/**
 * The text side of approvals: `/approve <id>` and `/deny <id>` decide a card
 * like its buttons; `/stop` and `/new` cancel what the conversation waits on
 * (and `/new` does not wait out APPROVAL_TIMEOUT).
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConsoleAdapter } from "../../adapters/console/index.js";
import * as ids from "../../adapters/console/ids.js";
import type { App } from "../../src/gateway/app.js";
import { FakeOpenAi, toolUsingModel } from "../fakes/openai.js";
import { eventually, startApp } from "../support/app.js";

describe("approvals by text and cancelled by /stop and /new", () => {
  let app: App;
  let url: string;
  let model: FakeOpenAi;
  const adapter = new ConsoleAdapter();

  beforeAll(async () => {
    model = await FakeOpenAi.start();
    model.responder = toolUsingModel({ trigger: "use the clock", tool: "current_time", args: "{}" });
    const r = await startApp(
      "sqlite",
      [adapter],
      { OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "fake-model", APPROVAL_TIMEOUT: "10m" },
      {
        mcpConfig: { servers: [], builtinTools: { current_time: { policy: "ask" } } },
      },
    );
    app = r.app;
    url = r.url;
  });
  afterAll(async () => {
    await app?.stop();
    await model?.close();
  });

  const say = async (user: string, text: string) => {
    const res = await fetch(`${url}/api/console/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ chat: { type: "private" }, sender: { id: user, name: user }, text, clientId: randomUUID() }),
    });
    expect(res.status).toBe(202);
  };
  const history = (user: string) => adapter.history(ids.dmChatId(user)).filter((m) => m.from === "bot");
  const card = (user: string) =>
    eventually(
      () => history(user).find((m) => m.card),
      (c) => c !== undefined,
      15_000,
      "the card",
    ).then((c) => c!);
  const text = (user: string, re: RegExp, what: string) =>
    eventually(
      () => history(user).map((m) => m.text),
      (t) => t.some((x) => re.test(x)),
      15_000,
      what,
    );

  it("/approve <id> runs the call; the card says who approved", async () => {
    await say("vic", "use the clock");
    const c = await card("vic");
    expect(c.text).toContain(`/approve ${c.card!.id}`);
    await say("vic", `/approve ${c.card!.id}`);
    await text("vic", /the tool said: UTC:/, "the answer");
    expect(history("vic").find((m) => m.card)!.text).toMatch(/Approved by vic/);
  });

  it("/deny <id> denies it; another chat cannot decide it", async () => {
    await say("wes", "use the clock");
    const c = await card("wes");
    await say("xia", `/approve ${c.card!.id}`);
    await text("xia", /There is no approval .* in this chat/, "the refusal in the other chat");
    await say("wes", `/deny ${c.card!.id}`);
    await text("wes", /the tool said: denied by approval policy/, "the answer");
    expect(history("wes").find((m) => m.card)!.text).toMatch(/Denied by wes/);
  });

  it("/stop cancels the pending approval and the turn", async () => {
    await say("yan", "use the clock");
    await card("yan");
    await say("yan", "/stop");
    await eventually(
      () => history("yan").find((m) => m.card)!.text,
      (t) => /Cancelled/.test(t),
      15_000,
      "the card cancelled",
    );
    await text("yan", /^Stopped/, "the /stop notice");
    expect(history("yan").some((m) => m.text.includes("the tool said"))).toBe(false);
    expect(app.tooling.approvals.waiting).toBe(0);
  });

  it("/new cancels it at once instead of waiting for APPROVAL_TIMEOUT", async () => {
    await say("zed", "use the clock");
    await card("zed");
    await say("zed", "/new");
    await text("zed", /Started a fresh session/, "the /new notice");
    expect(history("zed").find((m) => m.card)!.text).toMatch(/Cancelled: \/new/);
  });
});
