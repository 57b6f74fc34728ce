/**
 * A conversation rotated by /new before REFLECT_EVERY_TURNS is condensed
 * into memory too: the running gateway with the fake OpenAI-compatible model
 * answering the reflection. The review runs after the /new reply, never
 * before it, and a review lost with the process (the model call cut, then a
 * restart) is found again by the next start's sweep.
 */
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { ConsoleAdapter } from "../../adapters/console/index.js";
import * as ids from "../../adapters/console/ids.js";
import type { App } from "../../src/gateway/app.js";
import { FakeOpenAi, textReply, type Reply } from "../fakes/openai.js";
import { eventually, startApp } from "../support/app.js";
import { startAppOn } from "../support/app-on.js";

/** The reflection's request is the one whose system prompt keeps the long-term memory (src/runtime/reflection.ts). */
const isReflection = (body: unknown) =>
  String((body as { messages?: Array<{ content?: unknown }> })?.messages?.[0]?.content ?? "").includes("long-term memory");

describe("reflection of a session rotated by /new", () => {
  const apps: App[] = [];
  const models: FakeOpenAi[] = [];
  afterEach(async () => {
    for (const m of models.splice(0)) await m.close();
    for (const a of apps.splice(0)) await a.stop();
  });

  async function gateway(reflection: () => Reply, databaseUrl?: string) {
    const model = await FakeOpenAi.start();
    models.push(model);
    model.responder = (body) => (isReflection(body) ? reflection() : textReply(["noted"]));
    const adapter = new ConsoleAdapter();
    const env = { OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "fake-model", REFLECT_EVERY_TURNS: "5" };
    const { app, url, config } = databaseUrl ? await startAppOn(databaseUrl, [adapter], env) : await startApp("sqlite", [adapter], env);
    apps.push(app);
    const say = async (text: string) => {
      const res = await fetch(`${url}/api/console/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ chat: { type: "private" }, sender: { id: "rita", name: "Rita" }, text, clientId: randomUUID() }),
      });
      expect(res.status).toBe(202);
    };
    const bot = () =>
      adapter
        .history(ids.dmChatId("rita"))
        .filter((m) => m.from === "bot")
        .map((m) => m.text);
    const memoriesOf = (sessionId: string) =>
      app.db.query("t", app.db.q.selectFrom("Memory").select(["content", "sessionId"]).where("sessionId", "=", sessionId));
    return { app, model, say, bot, memoriesOf, databaseUrl: config.DATABASE_URL };
  }

  /** Two turns, then /new: returns the session /new archived. */
  async function twoTurnsThenNew(g: Awaited<ReturnType<typeof gateway>>): Promise<string> {
    await g.say("I am planning a trip to Lisbon");
    await eventually(g.bot, (b) => b.length >= 1, 15_000, "the first answer");
    await g.say("in May, with my sister");
    await eventually(g.bot, (b) => b.length >= 2, 15_000, "the second answer");
    const [old] = (await g.app.registry.listAll({ limit: 10 })).filter((s) => s.channel.includes(":dm:rita"));
    expect(old!.turnCount).toBe(2);
    await g.say("/new");
    await eventually(g.bot, (b) => b.some((t) => t.startsWith("Started a fresh session")), 15_000, "the /new reply");
    return old!.id;
  }

  it("condenses the archived session's turns into memory after /new, though it had fewer than REFLECT_EVERY_TURNS", async () => {
    const g = await gateway(() => textReply(["Rita plans a trip to Lisbon in May with her sister."]));
    const oldId = await twoTurnsThenNew(g);
    const rows = await eventually(
      () => g.memoriesOf(oldId),
      (r) => r.length > 0,
      15_000,
      "a memory row from the archived session",
    );
    expect(rows.map((r) => r.content)).toEqual(["Rita plans a trip to Lisbon in May with her sister."]);
    // The review read the archived session's own turns.
    const review = g.model.requests.find((r) => isReflection(r.body))!;
    expect(JSON.stringify(review.body.messages)).toContain("trip to Lisbon");
    expect(JSON.stringify(review.body.messages)).toContain("with my sister");
  });

  it("does not hold the /new reply for the model, and a review lost with the process is done by the next start's sweep", async () => {
    // The first gateway's reflection request never finishes: the /new reply must come anyway.
    const first = await gateway(() => ({ headers: { "content-type": "text/event-stream" }, body: [], hang: true }));
    const oldId = await twoTurnsThenNew(first);
    await eventually(
      () => first.model.requests.filter((r) => isReflection(r.body)).length,
      (n) => n === 1,
      15_000,
      "the reflection request (still open)",
    );
    // The process goes with its review unfinished: the model's connection is cut, then the gateway stops.
    await first.model.close();
    models.splice(models.indexOf(first.model), 1);
    await first.app.stop();
    apps.splice(apps.indexOf(first.app), 1);
    expect(await first.memoriesOf(oldId).catch(() => [])).toEqual([]);

    const second = await gateway(() => textReply(["Rita plans a trip to Lisbon."]), first.databaseUrl);
    expect(await second.app.reflector.sweep()).toBeGreaterThan(0);
    const rows = await eventually(
      () => second.memoriesOf(oldId),
      (r) => r.length > 0,
      15_000,
      "a memory row from the archived session",
    );
    expect(rows.map((r) => r.content)).toEqual(["Rita plans a trip to Lisbon."]);
  });
});
