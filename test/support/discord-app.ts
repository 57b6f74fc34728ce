import { afterAll, beforeAll } from "vitest";
import { DiscordAdapter } from "../../adapters/discord/index.js";
import type { DiscordAdapterOptions } from "../../adapters/discord/options.js";
import type { App } from "../../src/gateway/app.js";
import { FakeDiscord, type DChannel } from "../fakes/discord.js";
import { startApp } from "./app.js";

/** What a suite's Discord bot is: the loopback fake, the app (real discord.js, real SQLite file) and its one channel. */
export interface DiscordBot {
  fake: FakeDiscord;
  app: App;
  channel: DChannel;
}

/**
 * One Discord bot for a whole suite, in one guild with one channel, open to
 * everyone and answering mentions (the echo agent), started before the suite
 * and stopped after it. Read its parts inside tests (they exist only once
 * the suite has started).
 */
export function discordBotForSuite(opts: { adapter?: Partial<DiscordAdapterOptions>; env?: Record<string, string>; channel?: string } = {}): DiscordBot {
  const bot = {} as DiscordBot;
  beforeAll(async () => {
    bot.fake = new FakeDiscord();
    await bot.fake.start();
    const name = opts.channel ?? "general";
    bot.channel = bot.fake.addGuild({ channels: [name] }).channels[name]!;
    const adapter = new DiscordAdapter({ token: bot.fake.token, apiUrl: bot.fake.apiUrl, ...opts.adapter });
    const r = await startApp("sqlite", [adapter], {
      DM_POLICY: "open",
      GROUP_POLICY: "open",
      GROUP_REQUIRE_MENTION: "true",
      REFLECT_EVERY_TURNS: "0",
      ...opts.env,
    });
    bot.app = r.app;
  });
  afterAll(async () => {
    await bot.app?.stop();
    await bot.fake?.close();
  });
  return bot;
}
