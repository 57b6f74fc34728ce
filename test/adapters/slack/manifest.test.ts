import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { INTERACTIONS_PATH } from "../../../adapters/slack/approval-card.js";
import { UMBRELLA_COMMAND } from "../../../adapters/slack/commands.js";
import { ManifestError, SLACK_BOT_EVENTS, slackManifest } from "../../../adapters/slack/manifest.js";
import { normalizeEvent, type SlackIdentity } from "../../../adapters/slack/normalize.js";
import { SLACK_DEFAULT_SCOPES } from "../../../src/config/platforms.js";
import { FakeSlack } from "../../fakes/slack.js";

const scopes = [...SLACK_DEFAULT_SCOPES];
const EVENTS = ["app_mention", "message.channels", "message.groups", "message.im", "message.mpim", "app_uninstalled", "tokens_revoked"];

describe("the Slack app manifest", () => {
  it("HTTP mode: every request URL under PUBLIC_URL, the scopes and events exact, no socket", () => {
    const m = slackManifest({ publicUrl: "https://bot.example.com/", socketMode: false, oauth: false, botScopes: scopes });
    expect(m).toEqual({
      display_information: { name: "Switchboard", description: expect.any(String) },
      features: {
        bot_user: { display_name: "switchboard", always_online: true },
        slash_commands: [
          {
            command: "/switchboard",
            url: "https://bot.example.com/slack/commands",
            description: expect.any(String),
            usage_hint: expect.any(String),
            should_escape: false,
          },
        ],
      },
      oauth_config: { scopes: { bot: scopes } },
      settings: {
        event_subscriptions: { request_url: "https://bot.example.com/slack/events", bot_events: EVENTS },
        interactivity: { is_enabled: true, request_url: "https://bot.example.com/slack/interactions" },
        org_deploy_enabled: true,
        socket_mode_enabled: false,
        token_rotation_enabled: false,
      },
    });
    expect(m.features.slash_commands[0]!.command).toBe(UMBRELLA_COMMAND);
    expect(m.settings.interactivity.request_url).toBe(`https://bot.example.com${INTERACTIONS_PATH}`);
  });

  it("Socket Mode: no request URL anywhere, socket mode on; OAuth installs add the redirect URL and user scopes", () => {
    const m = slackManifest({
      publicUrl: "https://bot.example.com",
      socketMode: true,
      oauth: true,
      botScopes: ["chat:write", "commands"],
      userScopes: ["users:read"],
      name: "Helper",
    });
    expect(m.features.slash_commands[0]).not.toHaveProperty("url");
    expect(m.settings.event_subscriptions).toEqual({ bot_events: EVENTS });
    expect(m.settings.interactivity).toEqual({ is_enabled: true });
    expect(m.settings.socket_mode_enabled).toBe(true);
    expect(m.oauth_config).toEqual({
      redirect_urls: ["https://bot.example.com/slack/oauth_redirect"],
      scopes: { bot: ["chat:write", "commands"], user: ["users:read"] },
    });
    expect(m.display_information.name).toBe("Helper");
    expect(JSON.stringify(m)).not.toMatch(/\/slack\/(events|commands|interactions)/);
    // Socket Mode without OAuth needs no public address at all.
    expect(slackManifest({ socketMode: true, oauth: false, botScopes: scopes }).settings.socket_mode_enabled).toBe(true);
  });

  it("HTTP mode, or OAuth installs, without PUBLIC_URL: an error naming PUBLIC_URL", () => {
    for (const s of [
      { socketMode: false, oauth: false },
      { socketMode: true, oauth: true },
    ]) {
      let err: unknown;
      try {
        slackManifest({ ...s, botScopes: scopes });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ManifestError);
      expect((err as ManifestError).variable).toBe("PUBLIC_URL");
      expect((err as Error).message).toMatch(/PUBLIC_URL/);
    }
  });

  it("every bot event listed is one the adapter turns into a turn, or one the README's Slack section explains", () => {
    const sl = new FakeSlack();
    const me: SlackIdentity = { teamId: sl.identity.teamId, botUserId: sl.identity.botUserId, botId: sl.identity.botId };
    const readme = fs.readFileSync("README.md", "utf8");
    const slackSection = readme.slice(readme.indexOf("\n## Slack"), readme.indexOf("\n## ", readme.indexOf("\n## Slack") + 1));
    const channelOf = { im: "D0DM0001", channels: "C0GEN", groups: "G0PRIV", mpim: "G0MPIM" } as const;
    const typeOf = { im: "im", channels: "channel", groups: "group", mpim: "mpim" } as const;
    for (const event of SLACK_BOT_EVENTS) {
      if (event === "app_mention") {
        expect(normalizeEvent(sl.events.appMention({ channel: "C0GEN", user: "U0BOB" }), me), event).toMatchObject({ mentioned: true });
      } else if (event.startsWith("message.")) {
        const kind = event.slice("message.".length) as keyof typeof channelOf;
        const body = sl.events.message({ channel: channelOf[kind], user: "U0BOB", text: "hi", channelType: typeOf[kind] });
        expect(normalizeEvent(body, me), event).toMatchObject({ chatKind: kind === "im" ? "private" : "group" });
      } else {
        expect(slackSection, `README's Slack section explains ${event}`).toContain(`\`${event}\``);
      }
    }
  });
});
