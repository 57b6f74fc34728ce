import type { Config } from "../src/config.js";
import type { ManifestSettings, SlackManifest } from "./slack/manifest.js";
import type { Adapter } from "./types.js";

/**
 * The Slack app manifest for `switchboard slack manifest` (the CLI gets it from the composition root,
 * bin/switchboard.mjs); loaded when asked for, like the adapters.
 */
export async function slackManifest(settings: ManifestSettings): Promise<SlackManifest> {
  const m = await import("./slack/manifest.js");
  return m.slackManifest(settings);
}

/**
 * Every adapter the configuration turns on. Platform adapters are imported
 * only when their token is set, so a console-only start never loads an SDK.
 */
export async function adaptersFromConfig(config: Config): Promise<Adapter[]> {
  const out: Adapter[] = [];
  if (config.CONSOLE_ENABLED) {
    const { ConsoleAdapter } = await import("./console/index.js");
    out.push(new ConsoleAdapter());
  }
  if (config.TELEGRAM_BOT_TOKEN) {
    const { telegramAdapterFromConfig } = await import("./telegram/index.js");
    const a = telegramAdapterFromConfig(config);
    if (a) out.push(a);
  }
  if (config.DISCORD_BOT_TOKEN) {
    const { discordAdapterFromConfig } = await import("./discord/index.js");
    const a = discordAdapterFromConfig(config);
    if (a) out.push(a);
  }
  if (config.SLACK_BOT_TOKEN || config.SLACK_CLIENT_ID) {
    const { slackAdapterFromConfig } = await import("./slack/index.js");
    const a = slackAdapterFromConfig(config);
    if (a) out.push(a);
  }
  return out;
}
