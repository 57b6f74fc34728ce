/**
 * Probe: a slash command delivered twice (the same signed request again within
 * the 5 minutes the signature is good for: a replay, or a proxy that resends)
 * is one turn, answered once (README: "nothing answered twice"; the command's
 * dedupe key is its trigger_id). Covered elsewhere only at the normalizer
 * (normalize.test.ts), never through the route, Bolt and the gateway.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SlackAdapter } from "../../../adapters/slack/index.js";
import type { App } from "../../../src/gateway/app.js";
import { FakeSlack } from "../../fakes/index.js";
import { eventually, startApp } from "../../support/app.js";

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

describe("probe: a replayed slash command", () => {
  it("the same signed command request twice: one turn, one answer; the replay is acked without 'Working on it'", async () => {
    const fields = sl.events.slashCommand({ command: "/switchboard", text: "say hi once", user: "U0REPLAY", channel: "D0REPLAY1" });
    const ts = Math.floor(Date.now() / 1000);
    const first = await sl.postCommand(`${url}/slack/commands`, fields, { timestamp: ts });
    const again = await sl.postCommand(`${url}/slack/commands`, fields, { timestamp: ts });
    expect(first.status).toBe(200);
    expect(first.body).toContain("Working on it");
    expect(again.status).toBe(200);
    expect(again.body).not.toContain("Working on it");
    // A later message in the same DM is handled after anything recorded before it: once it is answered, so would a duplicate be.
    await sl.postEvent(`${url}/slack/events`, sl.events.message({ channel: "D0REPLAY1", user: "U0REPLAY", text: "marker" }));
    const texts = await eventually(
      () => sl.sent({ channel: "D0REPLAY1" }).map((m) => m.text),
      (t) => t.includes("echo: marker"),
      15_000,
      "the marker's answer",
    );
    expect(texts).toEqual(["echo: say hi once", "echo: marker"]);
  });
});
