import { describe, expect, it } from "vitest";
import { SlackAdapter, slackAdapterFromConfig } from "../../../adapters/slack/index.js";

describe("slackAdapterFromConfig", () => {
  it("is undefined without a bot token, HTTP mode with a signing secret, Socket Mode with an app token", () => {
    expect(slackAdapterFromConfig({})).toBeUndefined();
    expect(slackAdapterFromConfig({ SLACK_BOT_TOKEN: "  " })).toBeUndefined();
    const http = slackAdapterFromConfig({ SLACK_BOT_TOKEN: "xoxb-1", SLACK_SIGNING_SECRET: "s3cret-value" });
    expect(http).toBeInstanceOf(SlackAdapter);
    expect(http!.mode).toBe("http");
    expect(slackAdapterFromConfig({ SLACK_BOT_TOKEN: "xoxb-1", SLACK_APP_TOKEN: "xapp-1", SLACK_API_URL: "http://127.0.0.1:1/api/" })!.mode).toBe("socket");
  });

  it("refuses HTTP mode without a signing secret, naming the fix and not the token", () => {
    expect(() => slackAdapterFromConfig({ SLACK_BOT_TOKEN: "xoxb-secret-token" })).toThrow(/SLACK_SIGNING_SECRET/);
    try {
      slackAdapterFromConfig({ SLACK_BOT_TOKEN: "xoxb-secret-token" });
    } catch (e) {
      expect(String(e)).not.toContain("xoxb-secret-token");
    }
  });

  it("declares Slack's limits", () => {
    const a = slackAdapterFromConfig({ SLACK_BOT_TOKEN: "xoxb-1", SLACK_SIGNING_SECRET: "s3cret-value" })!;
    expect(a.limits).toEqual({
      maxTextLength: 3500,
      editIntervalMs: { private: 1500, group: 3000 },
      perChat: { ratePerSec: 1, burst: 3 },
      global: { ratePerSec: 50, burst: 50 },
      canEdit: true,
    });
    expect(a.platform).toBe("slack");
  });
});
