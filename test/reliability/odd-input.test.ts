/**
 * Oversize and odd input, end to end (MemoryAdapter -> real gateway ->
 * echo agent -> transcript -> reply), on SQLite and PostgreSQL.
 */
import { afterEach, describe, expect, it } from "vitest";
import { freshDatabaseUrl, PROVIDERS } from "../support/db.js";
import { boot, inboundStatuses, report, RetryingAdapter, until, type Booted } from "./helpers.js";
import { prisma } from "../support/prisma.js";

let booted: Booted | undefined;
afterEach(async () => {
  await booted?.app.stop().catch(() => undefined);
  booted = undefined;
});

const ODD: Record<string, string> = {
  empty: "",
  whitespace: "   \n\t ",
  emoji: "😀🎉👍🏽",
  rtl: "שלום עולם مرحبا بالعالم",
  zwj: "👩‍👩‍👧‍👦 a\u200Db\u200C\u2060c",
  bidiOverride: "\u202Egnp.exe\u202C",
  nul: "a\u0000b",
  loneHigh: "x\uD800y",
  loneLow: "\uDC00 end",
  reversedPair: "\uDC00\uD800",
  combining: "e\u0301\u0301\u0301",
};

describe.each(PROVIDERS)("odd input on %s", (provider) => {
  it("a 1 MB message gets a clear 'too long' reply and the next message works", async () => {
    const a = new RetryingAdapter("big");
    booted = await boot(await freshDatabaseUrl(provider), [a]);
    const huge = "x".repeat(1024 * 1024);
    const r = await a.deliver(a.dm("9", huge));
    const replied = await until(() => a.sent.length >= 1, 20_000, "the too-long reply");
    const reply = a.sent[0]?.text ?? "";
    await a.deliver(a.dm("9", "small one"));
    const next = await until(() => a.sent.some((s) => s.text === "echo: small one"), 20_000, "the next message");
    report("oversize-1MB", {
      provider,
      intake: r.status,
      replied,
      reply: reply.slice(0, 140),
      replyChars: reply.length,
      nextAnswered: next,
      inbound: await inboundStatuses(booted.app),
    });
    expect(reply).toMatch(/too long/i);
    expect(reply.length).toBeLessThan(500);
    expect(next).toBe(true);
  }, 60_000);

  it("empty, emoji, RTL, zero-width joiners and lone surrogates: handled, stored, echoed", async () => {
    const a = new RetryingAdapter("odd");
    booted = await boot(await freshDatabaseUrl(provider), [a]);
    const results: Record<string, unknown> = {};
    let failures = 0;
    let i = 0;
    for (const [name, text] of Object.entries(ODD)) {
      const chat = `odd${i++}`;
      let intake: string;
      try {
        intake = (await a.deliver(a.dm(chat, text), 3)).status;
      } catch (e) {
        intake = `threw: ${(e as Error).message.slice(0, 160)}`;
      }
      const got = await until(() => a.to(chat).length >= 1, 8_000, `a reply to ${name}`);
      await booted.app.gateway.idle();
      const reply = a.to(chat)[0]?.text;
      // What the transcript holds for this chat.
      const sessions = await prisma(booted.app.db).read((c) => c.session.findMany({ where: { channel: `telegram:odd:dm:${chat}` }, select: { id: true } }));
      const stored = sessions.length
        ? await prisma(booted.app.db).read((c) =>
            c.message.findMany({ where: { sessionId: { in: sessions.map((s) => s.id) } }, orderBy: { seq: "asc" }, select: { role: true, content: true } }),
          )
        : [];
      const user = stored.find((m) => m.role === "user")?.content;
      const echoedExactly = reply === `echo: ${text}`;
      const storedExactly = user === text;
      const ok = got && intake === "accepted";
      if (!ok) failures++;
      results[name] = {
        intake,
        replied: got,
        echoedExactly,
        storedExactly,
        ...(echoedExactly ? {} : { reply: JSON.stringify(reply)?.slice(0, 80) }),
        ...(storedExactly ? {} : { stored: JSON.stringify(user)?.slice(0, 80) }),
      };
    }
    // Nothing broke: a plain message still works.
    await a.deliver(a.dm("after", "plain"));
    const next = await until(() => a.to("after").some((s) => s.text === "echo: plain"), 10_000, "the next message");
    const inbound = await inboundStatuses(booted.app);
    report("odd-input", { provider, cases: Object.keys(ODD).length, notHandled: failures, nextAnswered: next, inbound, results });
    expect(next).toBe(true);
    expect(inbound.received ?? 0).toBe(0); // no event left stuck
    expect(failures).toBe(0);
  }, 90_000);
});
