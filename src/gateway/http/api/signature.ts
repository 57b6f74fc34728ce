import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Inbound hook signatures, in the manner of Stripe's and Slack's:
 *
 *   Switchboard-Delivery: <delivery id, 1-128 of A-Z a-z 0-9 _ : ->
 *   Switchboard-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>
 *
 * where the HMAC, keyed with the hook's secret, covers
 * `<t>.<delivery id>.<raw body>`. A timestamp more than 5 minutes away from
 * this server's clock is refused (a captured request cannot be replayed
 * later), and the delivery id is signed too, so a replay inside those 5
 * minutes must repeat it and is dropped as a duplicate. Several v1= entries
 * may be given (one per secret while rotating); any that matches passes.
 */
export const SIGNATURE_HEADER = "switchboard-signature";
export const DELIVERY_HEADER = "switchboard-delivery";
export const TOLERANCE_S = 300;
// No ".": it separates the signed string's parts, and an id holding one could move it into the body
// ("evt.1" + B and "evt" + "1." + B sign the same), so a captured request would replay under a new id.
const DELIVERY = /^[A-Za-z0-9_:-]{1,128}$/;

export interface SignatureParts {
  t: number;
  v1: Buffer[];
  delivery: string;
}

export type Parsed = { ok: true; parts: SignatureParts } | { ok: false; error: string };

/** Checks the headers alone (before the body is read): present, well-formed, fresh. */
export function parseSignature(signature: string | undefined, delivery: string | undefined, nowMs = Date.now()): Parsed {
  if (!signature || !delivery)
    return { ok: false, error: "sign the request: Switchboard-Signature (t=<unix seconds>,v1=<hex HMAC-SHA256>) and Switchboard-Delivery are required" };
  if (!DELIVERY.test(delivery))
    return { ok: false, error: "Switchboard-Delivery must be 1-128 characters of A-Z a-z 0-9 _ : - (no dot: it separates the signed parts)" };
  let t: number | undefined;
  const v1: Buffer[] = [];
  for (const part of signature.split(",")) {
    const eq = part.indexOf("=");
    const k = part.slice(0, eq).trim();
    const v = part.slice(eq + 1).trim();
    if (k === "t" && /^\d{1,12}$/.test(v)) t = Number(v);
    else if (k === "v1" && /^[0-9a-f]{64}$/i.test(v) && v1.length < 4) v1.push(Buffer.from(v, "hex"));
  }
  if (t === undefined || v1.length === 0) return { ok: false, error: "Switchboard-Signature must be t=<unix seconds>,v1=<64 hex digits>" };
  if (Math.abs(nowMs / 1000 - t) > TOLERANCE_S)
    return { ok: false, error: `the signature's timestamp is more than ${TOLERANCE_S} s from this server's clock: sign each request when it is sent` };
  return { ok: true, parts: { t, v1, delivery } };
}

export function sign(secret: string, t: number, delivery: string, body: Buffer | string): string {
  return createHmac("sha256", secret).update(`${t}.${delivery}.`).update(body).digest("hex");
}

/** Constant-time: every given v1 is compared in full. */
export function verify(secret: string, parts: SignatureParts, body: Buffer): boolean {
  const expected = Buffer.from(sign(secret, parts.t, parts.delivery, body), "hex");
  let ok = false;
  for (const v of parts.v1) if (timingSafeEqual(v, expected)) ok = true;
  return ok;
}

/** The header value a sender puts on a request (for tests and senders written in TypeScript). */
export function signatureHeader(secret: string, delivery: string, body: Buffer | string, nowMs = Date.now()): string {
  const t = Math.floor(nowMs / 1000);
  return `t=${t},v1=${sign(secret, t, delivery, body)}`;
}
