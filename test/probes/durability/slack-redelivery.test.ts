/**
 * Slack's redelivery against store faults, through the real Bolt receiver
 * against FakeSlack on a real SQLite file: an event whose record landed but
 * whose acknowledgement was lost, then Slack's retries (X-Slack-Retry-Num)
 * of it; and a retry that arrives while the first delivery's turn still
 * runs. Each is answered exactly once, without a restart.
 */
import { afterEach, describe, expect, it } from "vitest";
import { SlackAdapter } from "../../../adapters/slack/index.js";
import type { App } from "../../../src/gateway/app.js";
import type { StoreFaults } from "../../../src/store/index.js";
import { FakeSlack } from "../../fakes/slack.js";
import { eventually } from "../../support/app.js";
import { LostAck } from "../../support/faults.js";
import { startAppOn } from "../../support/app-on.js";
import { freshMigratedSqliteUrl } from "../../support/db.js";
import { slowEcho } from "../../reliability/helpers.js";

let fake: FakeSlack | undefined;
const apps: App[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.stop().catch(() => undefined);
  await fake?.close();
  fake = undefined;
});

async function gateway(opts: { faults?: StoreFaults; agentFactory?: unknown } = {}) {
  fake = new FakeSlack();
  await fake.start();
  const { app, url } = await startAppOn(
    await freshMigratedSqliteUrl(),
    [new SlackAdapter({ botToken: fake.botToken, signingSecret: fake.signingSecret, apiUrl: fake.apiUrl })],
    { REFLECT_EVERY_TURNS: "0" },
    { ...(opts.faults && { faults: opts.faults }), ...(opts.agentFactory ? { agentFactory: opts.agentFactory as never } : {}) },
  );
  apps.push(app);
  return { app, events: `${url}/slack/events`, fake };
}

describe("Slack redelivery against store faults", () => {
  it("the record lands but its acknowledgement is lost, Slack retries twice: one reply, without a restart", async () => {
    const lost = new LostAck("record-inbound");
    const { events, fake: f } = await gateway({ faults: lost });
    const body = f.events.message({ channel: "D0000LOST", user: "U0000LOST", text: "recorded once" });
    const first = await f.postEvent(events, body);
    // Whatever the first answer, Slack retries what it did not see acknowledged, and once more after a timeout.
    const second = await f.postEvent(events, body, { retryNum: 1, retryReason: first.status === 200 ? "http_timeout" : "http_error" });
    expect(second.status).toBe(200);
    await eventually(
      () => f.sent({ channel: "D0000LOST" }),
      (s) => s.length >= 1,
      20_000,
      "the reply",
    );
    expect((await f.postEvent(events, body, { retryNum: 2, retryReason: "http_timeout" })).status).toBe(200);
    for (const a of apps.splice(0)) await a.stop({ graceMs: 30_000 });
    expect(lost.armed).toBe(false);
    expect(f.sent({ channel: "D0000LOST" }).map((m) => m.text)).toEqual(["echo: recorded once"]);
  });

  it("a retry (X-Slack-Retry-Num 1, http_timeout) while the first delivery's turn still runs: acknowledged, one reply", async () => {
    const { app, events, fake: f } = await gateway({ agentFactory: slowEcho(300) });
    const body = f.events.message({ channel: "D0000SLOW", user: "U0000SLOW", text: "slow one" });
    expect((await f.postEvent(events, body)).status).toBe(200);
    expect((await f.postEvent(events, body, { retryNum: 1, retryReason: "http_timeout" })).status).toBe(200);
    await eventually(
      () => f.sent({ channel: "D0000SLOW" }),
      (s) => s.length >= 1,
      20_000,
      "the reply",
    );
    await app.gateway.idle();
    for (const a of apps.splice(0)) await a.stop({ graceMs: 30_000 });
    expect(f.sent({ channel: "D0000SLOW" }).map((m) => m.text)).toEqual(["echo: slow one"]);
  });
});
