/**
 * Probe: the signature checks existing tests do not cover (http.test.ts has
 * a wrong secret, a past timestamp, a zero signature and missing headers):
 * a timestamp from the future, a body changed after signing, the same JSON
 * re-serialized, and a signature taken over a body for another route's
 * encoding. Each is refused (401) on every Slack route and nothing of it is
 * recorded or answered.
 */
import { createHmac } from "node:crypto";
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

const sign = (ts: string, raw: string) => `v0=${createHmac("sha256", sl.signingSecret).update(`v0:${ts}:${raw}`).digest("hex")}`;
/** `ahead`: seconds added to the clock when the request is made (not when the test began, which seconds of other requests precede). */
async function post(path: string, raw: string, o: { ahead?: number; signedRaw?: string; contentType?: string } = {}): Promise<number> {
  const ts = String(Math.floor(Date.now() / 1000) + (o.ahead ?? 0));
  const res = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": o.contentType ?? "application/json", "x-slack-request-timestamp": ts, "x-slack-signature": sign(ts, o.signedRaw ?? raw) },
    body: raw,
  });
  await res.arrayBuffer();
  return res.status;
}

describe("probe: Slack signature edges", () => {
  it("future timestamp, tampered body, re-serialized JSON, form-encoded twin: 401 on every route, nothing answered", async () => {
    const evil = JSON.stringify(sl.events.message({ channel: "D0SIGEDG", user: "U0EVE", text: "evil" }));
    const signedOther = JSON.stringify(sl.events.message({ channel: "D0SIGEDG", user: "U0EVE", text: "harmless" }));
    for (const path of ["/slack/events", "/slack/commands", "/slack/interactions"]) {
      // A valid HMAC over a timestamp past the 5-minute window ahead: a pre-signed request to replay later. (Ahead by
      // more than 301 s: the second may turn between this clock and the server's; the exact edge, 300 s accepted and
      // 301 s refused, is test/adapters/slack/signature.test.ts's, on an injected clock.)
      expect(await post(path, evil, { ahead: 310 }), `${path} future`).toBe(401);
      // Signed over one body, sent with another.
      expect(await post(path, evil, { signedRaw: signedOther }), `${path} tampered`).toBe(401);
      // The same JSON with other whitespace: the raw bytes are what is signed.
      expect(await post(path, JSON.stringify(JSON.parse(evil), null, 1), { signedRaw: evil }), `${path} re-serialized`).toBe(401);
      // The payload form-encoded, signature over its JSON.
      expect(
        await post(path, new URLSearchParams({ payload: evil }).toString(), { signedRaw: evil, contentType: "application/x-www-form-urlencoded" }),
        `${path} form`,
      ).toBe(401);
    }
    // A genuine event after them is answered; any of the above that got through would have been answered before it.
    expect((await sl.postEvent(`${url}/slack/events`, sl.events.message({ channel: "D0SIGEDG", user: "U0EVE", text: "genuine" }))).status).toBe(200);
    const texts = await eventually(
      () => sl.sent({ channel: "D0SIGEDG" }).map((m) => m.text),
      (t) => t.length >= 1,
      15_000,
      "the genuine answer",
    );
    expect(texts).toEqual(["echo: genuine"]);
  });
});
