/**
 * Probe: Slack's routes are public and authenticated by the request signature
 * alone (README: "unsigned requests are refused before the body is read";
 * "POST /slack/events ... the request signature"). A request whose signature
 * headers are well formed but wrong is not Slack's: it must be refused as
 * such (401) whatever its body, never have its body parsed and judged first
 * (a 400 "malformed event_callback" tells a stranger the gateway read and
 * parsed up to 1 MB of their JSON before checking who sent it).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SlackAdapter } from "../../../adapters/slack/index.js";
import type { App } from "../../../src/gateway/app.js";
import { FakeSlack } from "../../fakes/index.js";
import { startApp } from "../../support/app.js";

let sl: FakeSlack;
let app: App;
let url: string;

beforeAll(async () => {
  sl = new FakeSlack();
  await sl.start();
  ({ app, url } = await startApp("sqlite", [new SlackAdapter({ botToken: sl.botToken, signingSecret: sl.signingSecret, apiUrl: sl.apiUrl })]));
});
afterAll(async () => {
  await app?.stop();
  await sl?.close();
});

describe("probe: a forged Slack request is refused before its body is judged", () => {
  it.each([
    ["an event that is not an object", { type: "event_callback", event: 1 }],
    ["a message event with a non-string channel", { type: "event_callback", event: { type: "message", channel: 5, user: "U0X", ts: "1.1" } }],
  ])("%s, with a well-formed but wrong signature: 401, not 400", async (_what, body) => {
    for (const path of ["/slack/events", "/slack/commands", "/slack/interactions"]) {
      const res = await sl.postEvent(`${url}${path}`, body, { signature: `v0=${"0".repeat(64)}` });
      expect(res.status, `${path}: ${res.body}`).toBe(401);
    }
  });
});
