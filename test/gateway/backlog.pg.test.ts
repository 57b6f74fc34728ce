import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../../src/gateway/app.js";
import { InboundStore, openDatabase } from "../../src/store/index.js";
import { eventually, startApp } from "../support/app.js";
import { freshDatabaseUrl, PROVIDERS } from "../support/db.js";
import { MemoryAdapter } from "../support/memory-adapter.js";

const CHATS = 100;
const PER_CHAT = 50;

/**
 * A backlog left by a previous run (the process was down while events were
 * being recorded): more unhandled events than one page of the start-up
 * replay. Every one is answered, each chat's in the order it was recorded.
 */
describe.each(PROVIDERS)("replaying a backlog at start on %s", (provider) => {
  let app: App | undefined;
  afterEach(async () => {
    await app?.stop();
    app = undefined;
  });

  it(`${CHATS * PER_CHAT} unhandled events at start are all answered, in order per chat`, async () => {
    const url = await freshDatabaseUrl(provider);
    const adapter = new MemoryAdapter();
    const db = await openDatabase({ url });
    const inbound = new InboundStore(db);
    // Recorded interleaved across chats, as live traffic would be.
    const writes: Array<Promise<unknown>> = [];
    for (let i = 0; i < PER_CHAT; i++) {
      for (let c = 0; c < CHATS; c++) {
        const env = adapter.dm(`b${c}`, `c${c}-m${i}`);
        writes.push(
          inbound.record({
            platform: env.platform,
            botId: env.botId,
            eventId: env.eventId,
            envelope: JSON.stringify(env),
            occurredAt: env.occurredAt,
            conversation: `${env.platform}:${env.botId}:${env.chatId}:`,
          }),
        );
      }
      await Promise.all(writes.splice(0));
    }
    await db.close();

    app = (await startApp(provider, [adapter], { DATABASE_URL: url })).app;
    const total = CHATS * PER_CHAT;
    await eventually(
      () => adapter.sent.length,
      (n) => n >= total,
      240_000,
      `${total} replies`,
    );
    await app.gateway.idle();
    const perChat = new Map<string, string[]>();
    for (const s of adapter.sent) perChat.set(s.chatId, [...(perChat.get(s.chatId) ?? []), s.text]);
    let outOfOrder = 0;
    for (let c = 0; c < CHATS; c++) {
      const want = Array.from({ length: PER_CHAT }, (_, i) => `echo: c${c}-m${i}`);
      if (JSON.stringify(perChat.get(`b${c}`)) !== JSON.stringify(want)) outOfOrder++;
    }
    const left = await app.db.query(
      "t",
      app.db.q
        .selectFrom("InboundEvent")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("status", "=", "received"),
    );
    console.log(
      `[backlog ${provider}] recorded ${total}, answered ${adapter.sent.length}, unique ${new Set(adapter.sent.map((s) => s.text)).size}, chats out of order ${outOfOrder}, left unhandled ${Number(left[0]!.n)}`,
    );
    expect(adapter.sent.length).toBe(total);
    expect(new Set(adapter.sent.map((s) => s.text)).size).toBe(total);
    expect(outOfOrder).toBe(0);
    expect(Number(left[0]!.n)).toBe(0);
  }, 300_000);
});
