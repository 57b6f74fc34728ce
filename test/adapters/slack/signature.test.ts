/**
 * The signature check's clock edge, on an injected clock: a timestamp up to
 * MAX_SKEW_SEC (5 min) either side of now is accepted when its HMAC is
 * right; one second more, ahead (a request pre-signed to replay later) or
 * behind (a replay), is refused as stale.
 */
import { describe, expect, it } from "vitest";
import { MAX_SKEW_SEC, signRequest, verifySignature } from "../../../adapters/slack/signature.js";

const secret = "test-signing-secret";
const raw = Buffer.from(JSON.stringify({ type: "event_callback", event: { type: "message" } }));
const now = 1_700_000_000;
const check = (ts: number) => {
  const t = String(ts);
  return verifySignature(secret, { "x-slack-request-timestamp": t, "x-slack-signature": signRequest(secret, t, raw) }, raw, now);
};

describe("verifySignature's clock edge", () => {
  it("accepts a timestamp up to 5 minutes ahead or behind, and refuses one second more either way", () => {
    expect(MAX_SKEW_SEC).toBe(300);
    expect(check(now)).toEqual({ ok: true });
    expect(check(now + 300)).toEqual({ ok: true });
    expect(check(now - 300)).toEqual({ ok: true });
    expect(check(now + 301)).toEqual({ ok: false, reason: "stale" });
    expect(check(now - 301)).toEqual({ ok: false, reason: "stale" });
  });

  it("a right timestamp with an HMAC over another body is forged", () => {
    const t = String(now);
    const other = signRequest(secret, t, Buffer.from("{}"));
    expect(verifySignature(secret, { "x-slack-request-timestamp": t, "x-slack-signature": other }, raw, now)).toEqual({ ok: false, reason: "forged" });
  });
});
