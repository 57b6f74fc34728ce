/**
 * Who is speaking, as the operator sees it (the console's API; the CLI's `sessions show`
 * is in speakers-cli.slow.test.ts), MODEL_SPEAKER_NAMES=prefix on the wire, and the cost
 * controls: MODELS_ALLOWED for /model, ADMIN_COMMANDS for /think and
 * /model, and the per-sender USER_TURNS_PER_MINUTE.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { App } from "../../src/gateway/app.js";
import { turnLimit } from "../../src/runtime/turn-limit.js";
import type { InEvent } from "../../src/runtime/events.js";
import { FakeOpenAi, textReply } from "../fakes/openai.js";
import { eventually, startApp } from "../support/app.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { prisma } from "../support/prisma.js";

let app: App | undefined;
let ai: FakeOpenAi | undefined;
afterEach(async () => {
  await app?.stop();
  await ai?.close();
  app = ai = undefined;
});

async function start(env: Record<string, string> = {}, withModel = false) {
  const adapter = new MemoryAdapter();
  if (withModel) ai = await FakeOpenAi.start();
  const r = await startApp("sqlite", [adapter], { ...(ai && { OPENAI_BASE_URL: ai.baseUrl, OPENAI_MODEL: "fake-model" }), ...env });
  app = r.app;
  return { a: adapter, url: r.url, config: r.config };
}

const named = (a: MemoryAdapter, chat: string, user: string, name: string, text: string, mentioned = true) =>
  a.group(chat, user, text, { senderName: name, mentioned });

describe("who is speaking", () => {
  it("the console's API names each group message's speaker (the CLI's `sessions show`: speakers-cli.slow.test.ts)", async () => {
    const { a, url } = await start();
    await a.ctx.inbound(named(a, "-50", "11", "Alice", "hello from alice"));
    await a.ctx.inbound(named(a, "-50", "22", "Bob", "and bob here", false));
    await eventually(
      () => a.sent.length,
      (n) => n >= 1,
    );
    await eventually(
      async () => prisma(app!.db).read((db) => db.message.count({ where: { role: "user" } })),
      (n) => n === 2,
      10_000,
      "both entries",
    );
    const [session] = await app!.registry.listAll();
    const r = await fetch(`${url}/api/sessions/${session!.id}`);
    const body = (await r.json()) as { messages: Array<{ role: string; content: string; speaker?: string }> };
    expect(
      body.messages
        .filter((m) => m.role === "user")
        .map((m) => [m.speaker, m.content])
        .sort(),
    ).toEqual([
      ["Alice", "hello from alice"],
      ["Bob", "and bob here"],
    ]);
    expect(body.messages.find((m) => m.role === "assistant")?.speaker).toBeUndefined();
  }, 60_000);

  it("MODEL_SPEAKER_NAMES=prefix writes [Name] before each group message instead of the name field; a private chat gets neither", async () => {
    const { a } = await start({ MODEL_SPEAKER_NAMES: "prefix" }, true);
    ai!.enqueue(textReply(["one"]), textReply(["two"]));
    await a.ctx.inbound(named(a, "-51", "11", "Ana [María]", "hola"));
    await eventually(
      () => a.sent.length,
      (n) => n >= 1,
    );
    const users = (ai!.requests[0]!.body.messages as Array<{ role: string; content: string; name?: string }>).filter((m) => m.role === "user");
    expect(users).toEqual([{ role: "user", content: "[Ana María] hola" }]);
    await a.ctx.inbound(a.dm("33", "just me"));
    await eventually(
      () => a.sent.length,
      (n) => n >= 2,
    );
    const dm = (ai!.requests[1]!.body.messages as Array<{ role: string; content: string; name?: string }>).filter((m) => m.role === "user");
    expect(dm).toEqual([{ role: "user", content: "just me" }]);
  });
});

describe("cost controls", () => {
  it("MODELS_ALLOWED: /model takes only a listed model; a bad value lists the allowed ones; the turn uses the chosen one", async () => {
    const { a } = await start({ MODELS_ALLOWED: "fake-model,small-model" }, true);
    ai!.enqueue(textReply(["ok"]));
    await a.ctx.inbound(a.dm("40", "/model gpt-4-very-expensive"));
    await a.ctx.inbound(a.dm("40", "/model small-model"));
    await a.ctx.inbound(a.dm("40", "/model"));
    await a.ctx.inbound(a.dm("40", "hi"));
    const texts = await eventually(
      () => a.to("40").map((m) => m.text),
      (t) => t.length >= 4,
      10_000,
      "four replies",
    );
    expect(texts[0]).toBe("The model gpt-4-very-expensive is not allowed here. Choose one of: fake-model, small-model.");
    expect(texts[1]).toBe("model set to small-model.");
    expect(texts[2]).toBe("model: small-model. Usage: /model <value> Allowed: fake-model, small-model.");
    expect(ai!.requests[0]!.body.model).toBe("small-model");
  });

  it("MODELS_ALLOWED: a session's model chosen before the list was set falls back to the default model", async () => {
    const { a } = await start({}, true);
    ai!.enqueue(textReply(["first"]));
    await a.ctx.inbound(a.dm("41", "/model big-model"));
    await eventually(
      () => a.to("41").length,
      (n) => n >= 1,
    );
    const dbUrl = app!.config.DATABASE_URL;
    await app!.stop();
    const again = await startApp("sqlite", [a], {
      DATABASE_URL: dbUrl,
      OPENAI_BASE_URL: ai!.baseUrl,
      OPENAI_MODEL: "fake-model",
      MODELS_ALLOWED: "fake-model",
    });
    app = again.app;
    await a.ctx.inbound(a.dm("41", "hi"));
    await eventually(
      () => ai!.requests.length,
      (n) => n >= 1,
    );
    expect(ai!.requests[0]!.body.model).toBe("fake-model");
  });

  it("ADMIN_COMMANDS=think,model keeps both with the operators", async () => {
    const { a } = await start({ ADMIN_COMMANDS: "think,model,approve", ADMIN_USERS: "telegram:1" });
    await a.ctx.inbound(a.dm("2", "/think high"));
    await a.ctx.inbound(a.dm("2", "/model other"));
    await a.ctx.inbound(a.dm("1", "/think high"));
    await eventually(
      () => a.sent.length,
      (n) => n >= 3,
    );
    expect(a.to("2").map((m) => m.text)).toEqual(["/think is for operators only.", "/model is for operators only."]);
    expect(a.to("1").map((m) => m.text)).toEqual(["thinking level set to high."]);
  });

  it("USER_TURNS_PER_MINUTE counts per sender across chats, answers politely past it, and leaves commands and other senders alone", async () => {
    const { a } = await start({ USER_TURNS_PER_MINUTE: "2" });
    await a.ctx.inbound(a.dm("60", "one"));
    await a.ctx.inbound(named(a, "-60", "60", "Carol", "two, in a group"));
    await a.ctx.inbound(a.dm("60", "three"));
    await a.ctx.inbound(a.dm("60", "/status"));
    await a.ctx.inbound(a.dm("61", "someone else"));
    await eventually(
      () => a.sent.length,
      (n) => n >= 5,
      10_000,
      "five replies",
    );
    // Sender 60's three messages went to two chats, handled side by side: two are answered, one is refused, whichever came last.
    const replies = [...a.to("60"), ...a.to("-60")].map((m) => m.text);
    expect(replies.filter((t) => t.startsWith("echo: "))).toHaveLength(2);
    const refused = replies.filter((t) => t.startsWith("You're sending"));
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatch(/^You're sending messages faster than I can answer: at most 2 a minute\. Please wait about \d+ s and send it again\.$/);
    // A command is not a turn: /status still answers.
    expect(replies.filter((t) => t.startsWith("session: "))).toHaveLength(1);
    expect(a.to("61").map((m) => m.text)).toEqual(["echo: someone else"]);
  });

  it("the limit is a sliding minute: a turn is allowed again once the oldest is a minute old; operators are exempt", () => {
    vi.useFakeTimers({ now: 1_000_000 });
    try {
      const limit = turnLimit({ perMinute: 2 });
      const notes: string[] = [];
      const ctx = { notify: (_s: string, t: string) => notes.push(t) } as never;
      const ev = (sender: string, isAdmin = false) =>
        ({ type: "message", respond: true, isAdmin, origin: { platform: "telegram", chatId: "c", senderId: sender }, text: "x" }) as unknown as InEvent;
      // The limit is middleware: a message it lets through is passed on to next().
      const passes = (e: InEvent) => {
        let passed = false;
        void limit(e, ctx, async () => {
          passed = true;
        });
        return passed;
      };
      expect([passes(ev("a")), passes(ev("a")), passes(ev("a"))]).toEqual([true, true, false]);
      expect(notes[0]).toContain("Please wait about 60 s");
      vi.advanceTimersByTime(30_000);
      expect(passes(ev("a"))).toBe(false);
      expect(notes[1]).toContain("Please wait about 30 s");
      vi.advanceTimersByTime(30_000);
      expect(passes(ev("a"))).toBe(true);
      expect([passes(ev("root", true)), passes(ev("root", true)), passes(ev("root", true))]).toEqual([true, true, true]);
      expect(limit.tracked).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("a server that refuses the name field", () => {
  it("is detected: the turn is retried with [Name] prefixes, and later turns to that server use them at once", async () => {
    const { a } = await start({}, true);
    const refusal = JSON.stringify({ error: { message: "Additional properties are not allowed ('name' was unexpected)", type: "invalid_request_error" } });
    ai!.enqueue({ status: 400, headers: { "content-type": "application/json" }, body: [refusal] }, textReply(["first"]), textReply(["second"]));
    await a.ctx.inbound(named(a, "-70", "11", "Alice", "hi there"));
    await eventually(
      () => a.to("-70").map((m) => m.text),
      (t) => t.includes("first"),
      10_000,
      "the first answer",
    );
    await a.ctx.inbound(named(a, "-70", "22", "Bob", "me too"));
    await eventually(
      () => a.to("-70").map((m) => m.text),
      (t) => t.includes("second"),
      10_000,
      "the second answer",
    );
    const users = (n: number) => (ai!.requests[n]!.body.messages as Array<{ role: string; content: string; name?: string }>).filter((m) => m.role === "user");
    expect(users(0)).toEqual([{ role: "user", content: "hi there", name: "Alice" }]);
    expect(users(1)).toEqual([{ role: "user", content: "[Alice] hi there" }]);
    expect(users(2)).toEqual([
      { role: "user", content: "[Alice] hi there" },
      { role: "user", content: "[Bob] me too" },
    ]);
    expect(ai!.requests).toHaveLength(3);
  });
});
