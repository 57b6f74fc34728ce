import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { isIP } from "node:net";

/**
 * Who may use the operator surface (console, /api/*, /metrics), decided on
 * the request's headers alone:
 *
 * - the Host must be a loopback name, the host of PUBLIC_URL, or the
 *   listener's own address: a page on another domain that rebinds its DNS
 *   name to this machine still sends its own name as Host (DNS rebinding);
 * - with OPERATOR_TOKEN set, the request must carry it, as a bearer header
 *   (API, Prometheus) or as the login cookie (the console page);
 * - without a token (only allowed on a loopback bind), the Host check alone
 *   applies, so the two-command local start keeps working;
 * - a state-changing request from a browser must come from this origin.
 */

export const COOKIE_NAME = "switchboard_operator";
/** How long a console login lasts. */
export const COOKIE_MAX_AGE_S = 7 * 24 * 3600;

export interface OperatorAuthOptions {
  token?: string;
  /** PUBLIC_URL: its host is allowed, and its scheme decides the cookie's Secure flag. */
  publicUrl?: string;
  /** Specific bind addresses (not wildcards) of the listeners serving operator routes. */
  bindHosts?: string[];
}

export interface RequestFacts {
  method: string;
  headers: Record<string, string | string[] | undefined>;
  /** The host of the request target (the Host header, or an absolute-form URL's host). */
  urlHost: string;
  remoteAddress: string | undefined;
}

export type Verdict = { ok: true; by: "token" | "open" } | { ok: false; status: 401 | 403; reason: "host" | "auth" | "origin"; error: string };

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "::1", "[::1]"]);

/** The hostname of a Host header value, lower-cased, without port and brackets kept for IPv6. */
export function hostnameOf(host: string): string {
  const h = host.trim().toLowerCase();
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    return end > 0 ? h.slice(0, end + 1) : h;
  }
  const colon = h.indexOf(":");
  return colon >= 0 ? h.slice(0, colon) : h;
}

export function isLoopbackHostname(name: string): boolean {
  const n = name.replace(/\.$/, "");
  return LOOPBACK_NAMES.has(n) || n.endsWith(".localhost") || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(n);
}

export function isLoopbackAddress(addr: string | undefined): boolean {
  if (!addr) return false;
  const a = addr.startsWith("::ffff:") ? addr.slice(7) : addr;
  return a === "::1" || /^127\./.test(a);
}

const digest = (s: string) => createHash("sha256").update(s, "utf8").digest();

/** Constant-time comparison; hashing first gives both sides one length. */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

const header = (h: RequestFacts["headers"], name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? undefined : v;
};

export class OperatorAuth {
  readonly #token: string | undefined;
  readonly #cookieValue: string | undefined;
  readonly #allowedHosts = new Set<string>();
  readonly secureCookie: boolean;

  constructor(o: OperatorAuthOptions) {
    this.#token = o.token;
    // The cookie holds a value derived from the token, never the token itself.
    this.#cookieValue = o.token ? createHmac("sha256", o.token).update("switchboard console login v1").digest("hex") : undefined;
    let secure = false;
    if (o.publicUrl) {
      const u = new URL(o.publicUrl);
      this.#allowedHosts.add(hostnameOf(u.host));
      secure = u.protocol === "https:";
    }
    for (const b of o.bindHosts ?? []) if (b && !["0.0.0.0", "::", "[::]"].includes(b)) this.#allowedHosts.add(hostnameOf(isIP(b) === 6 ? `[${b}]` : b));
    this.secureCookie = secure;
  }

  get hasToken(): boolean {
    return this.#token !== undefined;
  }

  hostAllowed(hostHeader: string | undefined): boolean {
    if (!hostHeader) return false;
    const name = hostnameOf(hostHeader);
    return isLoopbackHostname(name) || this.#allowedHosts.has(name);
  }

  /** A bearer header or the login cookie carrying the token. */
  hasValidToken(headers: RequestFacts["headers"]): boolean {
    if (!this.#token || !this.#cookieValue) return false;
    const auth = header(headers, "authorization");
    const m = auth ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
    if (m && sameSecret(m[1]!, this.#token)) return true;
    const cookie = readCookie(header(headers, "cookie"), COOKIE_NAME);
    return cookie !== undefined && sameSecret(cookie, this.#cookieValue);
  }

  /** The login form's check: the token as typed. */
  tokenMatches(given: string): boolean {
    return this.#token !== undefined && sameSecret(given, this.#token);
  }

  get cookieValue(): string | undefined {
    return this.#cookieValue;
  }

  /** Loopback from both ends: a local process asking for a local name. */
  isLoopbackRequest(f: RequestFacts): boolean {
    return isLoopbackAddress(f.remoteAddress) && isLoopbackHostname(hostnameOf(header(f.headers, "host") ?? "")) && isLoopbackHostname(hostnameOf(f.urlHost));
  }

  check(f: RequestFacts): Verdict {
    const host = header(f.headers, "host");
    if (!this.hostAllowed(host) || !this.hostAllowed(f.urlHost)) {
      return {
        ok: false,
        status: 403,
        reason: "host",
        error: "this host name is not allowed for the operator pages: use 127.0.0.1 or localhost, or set PUBLIC_URL to the address you open",
      };
    }
    const byToken = this.hasValidToken(f.headers);
    if (this.#token && !byToken)
      return { ok: false, status: 401, reason: "auth", error: "sign in: send Authorization: Bearer <OPERATOR_TOKEN>, or log in at /login" };
    if (!["GET", "HEAD", "OPTIONS"].includes(f.method) && !this.#sameOrigin(f, byToken)) {
      return {
        ok: false,
        status: 403,
        reason: "origin",
        error: "cross-origin requests to the operator API are refused: open the console from this gateway's own address",
      };
    }
    return { ok: true, by: byToken ? "token" : "open" };
  }

  /**
   * A browser always sends Origin on a POST; a script (curl, Prometheus)
   * sends none. A bearer header cannot be attached cross-site without a
   * CORS preflight this server never grants, so it needs no Origin.
   */
  #sameOrigin(f: RequestFacts, byBearerOrCookie: boolean): boolean {
    const origin = header(f.headers, "origin");
    const host = header(f.headers, "host");
    if (origin === undefined) {
      const site = header(f.headers, "sec-fetch-site");
      return site === undefined || site === "same-origin" || site === "none" || (byBearerOrCookie && header(f.headers, "authorization") !== undefined);
    }
    if (origin === "null") return false;
    try {
      return host !== undefined && new URL(origin).host === host.toLowerCase();
    } catch {
      return false;
    }
  }
}

export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
