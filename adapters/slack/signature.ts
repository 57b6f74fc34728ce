/**
 * Slack request signing: `v0=` + hex(HMAC-SHA256(secret, `v0:${ts}:${rawBody}`)),
 * over the raw bytes as received (re-serialized JSON would not match).
 */
import { createHmac, timingSafeEqual } from "node:crypto";

/** Slack's own limit: a request older than this is a replay. */
export const MAX_SKEW_SEC = 5 * 60;

export type SignatureCheck = { ok: true } | { ok: false; reason: "missing" | "stale" | "forged" };

export function signRequest(secret: string, timestamp: string, rawBody: Buffer | string): string {
  return `v0=${createHmac("sha256", secret).update(`v0:${timestamp}:`).update(rawBody).digest("hex")}`;
}

export function verifySignature(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  rawBody: Buffer,
  nowSec = Math.floor(Date.now() / 1000),
): SignatureCheck {
  const ts = single(headers["x-slack-request-timestamp"]);
  const sig = single(headers["x-slack-signature"]);
  if (!ts || !sig) return { ok: false, reason: "missing" };
  if (!/^\d{1,12}$/.test(ts) || Math.abs(nowSec - Number(ts)) > MAX_SKEW_SEC) return { ok: false, reason: "stale" };
  const expected = Buffer.from(signRequest(secret, ts, rawBody), "utf8");
  const given = Buffer.from(sig, "utf8");
  // timingSafeEqual needs equal lengths; the length of a v0 signature is public anyway.
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: "forged" };
  return { ok: true };
}

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The part of the check that needs no body: both headers present and well
 * formed. The HTTP edge runs it before reading the body, so an unsigned
 * request costs no buffering at all.
 */
export function signatureHeadersPresent(headers: Record<string, string | string[] | undefined>): boolean {
  const ts = headers["x-slack-request-timestamp"];
  const sig = headers["x-slack-signature"];
  return typeof ts === "string" && /^\d{1,12}$/.test(ts) && typeof sig === "string" && /^v0=[0-9a-f]{64}$/.test(sig);
}
