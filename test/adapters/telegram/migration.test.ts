import { afterEach, describe, expect, it } from "vitest";
import { TelegramAdapter } from "../../../adapters/telegram/index.js";
import type { App } from "../../../src/gateway/app.js";
import { FakeTelegram, type TgUpdate } from "../../fakes/telegram.js";
import { eventually, startApp } from "../../support/app.js";
import { newAdapter } from "./helpers.js";

/**
 * A Telegram group upgraded to a supergroup gets a new chat id. Its
 * conversation follows it: the same session, its transcript, its earlier
 * sessions for /resume; and a reply still addressed to the old id reaches
 * the supergroup. Through grammY against FakeTelegram, which sends the two
 * service messages and refuses the old id as the Bot API does.
 */
describe("Telegram supergroup migration", () => {
  let fake: FakeTelegram | undefined;
  let app: App | undefined;
  afterEach(async () => {
    await app?.stop();
    app = undefined;
    await fake?.close();
    fake = undefined;
  });

  const sessionOf = (text: string) => /session: (\S+)/.exec(text)![1]!;

  for (const mode of ["polling", "webhook"] as const) {
    it(`${mode}: the session, transcript and earlier sessions follow the group to its supergroup id`, async () => {
      fake = new FakeTelegram();
      await fake.start();
      const tg = fake;
      const adapter = new TelegramAdapter({
        token: tg.token,
        apiRoot: tg.apiRoot,
        mode,
        pollingTimeoutSec: 1,
        ...(mode === "webhook" ? { webhookSecret: "hook-secret" } : {}),
      });
      const started = await startApp("sqlite", [adapter]);
      app = started.app;
      const hook = `${started.url}/telegram/${tg.botUser.id}`;
      // Polling: queued for getUpdates. Webhook: POSTed as Telegram would, one at a time.
      const deliver = async (u: TgUpdate) => {
        if (mode === "polling") tg.inject(u);
        else expect((await tg.deliverWebhook(hook, u, "hook-secret")).status).toBe(200);
      };
      const command = (o: Parameters<FakeTelegram["build"]["command"]>[0]) => deliver(tg.build.command(o));
      const alice = tg.user("Alice");
      const group = tg.group("Team");
      const replies = (chatId: number) => tg.sent({ chatId }).map((s) => s.text);

      await command({ chat: group, from: alice, command: "status" });
      await eventually(
        () => replies(group.id),
        (r) => r.length === 1,
        10_000,
        "the first /status",
      );
      const earlier = sessionOf(replies(group.id)[0]!);
      await command({ chat: group, from: alice, command: "new" });
      await deliver(tg.build.mention({ chat: group, from: alice, text: "remember the blue door" }));
      await eventually(
        () => replies(group.id),
        (r) => r.length === 3,
        10_000,
        "the /new and the mention's answer",
      );
      await command({ chat: group, from: alice, command: "status" });
      await eventually(
        () => replies(group.id),
        (r) => r.length === 4,
        10_000,
        "the second /status",
      );
      const current = sessionOf(replies(group.id)[3]!);
      expect(current).not.toBe(earlier);

      const { supergroup, updates } = tg.build.migrateToSupergroup(group, alice);
      for (const u of updates) await deliver(u);
      await command({ chat: supergroup, from: alice, command: "status" });
      const [status] = await eventually(
        () => replies(supergroup.id),
        (r) => r.length === 1,
        10_000,
        "/status in the supergroup",
      );
      expect(sessionOf(status!)).toBe(current);
      const info = await app.registry.listAll();
      expect(info.filter((s) => !s.archived).map((s) => s.id)).toEqual([current]);
      // And the earlier session can be resumed from the supergroup.
      await command({ chat: supergroup, from: alice, command: "resume", args: earlier });
      await eventually(
        () => replies(supergroup.id),
        (r) => r.length === 2,
        10_000,
        "the /resume answer",
      );
      await command({ chat: supergroup, from: alice, command: "status" });
      await eventually(
        () => replies(supergroup.id),
        (r) => r.length === 3,
        10_000,
        "/status after /resume",
      );
      expect(sessionOf(replies(supergroup.id)[2]!)).toBe(earlier);
      // The transcript came along too: the session holds what was said before the upgrade.
      const transcript = await (await fetch(`${started.url}/api/sessions/${current}`)).text();
      expect(transcript).toContain("remember the blue door");
    });
  }

  it("a reply addressed to the old group id is sent to the supergroup (400 migrate_to_chat_id, then the new id)", async () => {
    fake = new FakeTelegram();
    await fake.start();
    const adapter = newAdapter(fake);
    const alice = fake.user("Alice");
    const group = fake.group("Team");
    const asked = fake.mention({ chat: group, from: alice, text: "question" });
    const supergroup = fake.migrateToSupergroup(group, alice);
    const to = { platform: "telegram" as const, botId: String(fake.botUser.id), chatId: String(group.id), replyToMessageId: String(asked.message!.message_id) };
    const first = await adapter.sink.send(to, "the answer");
    await adapter.sink.send(to, "and more");
    expect(fake.sent({ chatId: group.id })).toEqual([]);
    expect(fake.sent({ chatId: supergroup.id }).map((s) => s.text)).toEqual(["the answer", "and more"]);
    expect(first.messageId).toBe(String(fake.sent({ chatId: supergroup.id })[0]!.messageId));
    const calls = fake.callsTo("sendMessage").map((c) => String(c.params.chat_id));
    // One refused call to the old id, then every send goes straight to the new one.
    expect(calls).toEqual([String(group.id), String(supergroup.id), String(supergroup.id)]);
    await adapter.stop();
  });
});
