/**
 * A graceful stop with an approval pending (issue 26, item 9): the stop does
 * not wait out SHUTDOWN_GRACE for a person. The approval expires with the
 * stop, its card says the gateway is restarting, the turn is abandoned (it
 * commits nothing), and after the restart the message is answered again: it
 * asks anew, and approving that card resumes it to the tool's result.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConsoleAdapter } from "../../adapters/console/index.js";
import * as ids from "../../adapters/console/ids.js";
import type { App } from "../../src/gateway/app.js";
import { FakeOpenAi, toolUsingModel } from "../fakes/openai.js";
import { eventually, startApp } from "../support/app.js";
import { startAppOn } from "../support/app-on.js";

const TEN_MINUTES = 600_000;

describe("a graceful stop with an approval pending", () => {
  let model: FakeOpenAi;
  const apps: App[] = [];

  beforeAll(async () => {
    model = await FakeOpenAi.start();
    model.responder = toolUsingModel({ trigger: "use the clock", tool: "current_time", args: '{"timezone":"UTC"}' });
  });
  afterAll(async () => {
    for (const a of apps) await a.stop().catch(() => undefined);
    await model?.close();
  });

  const env = (): Record<string, string> => ({ OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "fake-model", APPROVAL_TIMEOUT: "1h" });
  const opts = { mcpConfig: { servers: [], builtinTools: { current_time: { policy: "ask" as const } } } };
  const history = (a: ConsoleAdapter, user: string) => a.history(ids.dmChatId(user)).filter((m) => m.from === "bot");
  const cardOf = (a: ConsoleAdapter, user: string, what: string) =>
    eventually(
      () => history(a, user).find((m) => m.card?.state === "pending"),
      (c) => c !== undefined,
      15_000,
      what,
    ).then((c) => c!);

  it("expires the approval with the stop instead of waiting the grace, and the message is answered again after the restart", async () => {
    const first = new ConsoleAdapter();
    const r = await startApp("sqlite", [first], env(), opts);
    apps.push(r.app);
    const post = (url: string, path: string, body: unknown) =>
      fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const said = await post(r.url, "/api/console/messages", {
      chat: { type: "private" },
      sender: { id: "ann", name: "Ann" },
      text: "use the clock please",
      clientId: randomUUID(),
    });
    expect(said.status).toBe(202);
    const card = await cardOf(first, "ann", "the approval card");
    const approvalId = card.card!.id;
    // Queued behind the waiting turn (BUSY_POLICY=queue): a stop starts no queued turn, so it is answered after the restart.
    const queued = await post(r.url, "/api/console/messages", {
      chat: { type: "private" },
      sender: { id: "ann", name: "Ann" },
      text: "and hello too",
      clientId: randomUUID(),
    });
    expect(queued.status).toBe(202);
    await eventually(
      () => r.app.runner.stats().queued,
      (n) => n === 1,
      15_000,
      "the second message queued",
    );

    // SHUTDOWN_GRACE of ten minutes, far past this test's timeout: the stop resolving at all shows it did not wait for a person.
    await r.app.stop({ graceMs: TEN_MINUTES });
    apps.pop();

    const edited = history(first, "ann").find((m) => m.card?.id === approvalId)!;
    expect(edited.card!.state).toBe("expired");
    expect(edited.card!.actions).toHaveLength(0);
    expect(edited.text).toMatch(/Expired: the gateway is restarting before a decision; your message is answered again/);
    // The turn was abandoned, not answered, and the queued one never started (the stop waits for what runs): nothing but the card reached the chat.
    expect(history(first, "ann").filter((m) => !m.card)).toHaveLength(0);

    const second = new ConsoleAdapter();
    const again = await startAppOn(r.config.DATABASE_URL, [second], env(), opts);
    apps.push(again.app);
    const record = await again.app.tooling.approvals.opts.store.get(approvalId);
    expect(record?.status).toBe("expired");
    const asked = await cardOf(second, "ann", "the replayed message's new card");
    expect(asked.card!.id).not.toBe(approvalId);
    const click = await post(again.url, "/api/console/approvals", {
      approvalId: asked.card!.id,
      action: "approve",
      chatId: ids.dmChatId("ann"),
      sender: { id: "ann", name: "Ann" },
    });
    expect(click.status).toBe(200);
    await eventually(
      () => history(second, "ann").map((m) => m.text),
      (t) => t.some((x) => /the tool said: UTC:/.test(x)) && t.includes("echo: and hello too"),
      15_000,
      "both answers after the restart",
    );
  });
});
