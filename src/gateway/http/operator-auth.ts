import { createHash, timingSafeEqual } from "node:crypto";
import { isIP } from "node:net";
import type { KvStore } from "../../store/kv.js";
import { LoginSessions, SESSION_MAX_AGE_S } from "./login-sessions.js";

/**
 * Who may use the operator surface (console, /api/*, /metrics), decided on
 * the request's headers alone:
 *
 * - the Host must be a loopback name, the host of PUBLIC_URL, or the
 *   listener's own address: a page on another domain that rebinds its DNS
 *   name to this machine still sends its own name as Host (DNS rebinding);
 * - with OPERATOR_TOKEN set, the request must carry it, as a bearer header
 *   (API, Prometheus), or the login cookie (the console page): a signed
 *   session with an expiry, checked against the store on every request
 *   (login-sessions.ts), so a logout revokes it;
 * - without a token (only allowed on a loopback bind), the Host check alone
 *   applies, so the two-command local start keeps working;
 * - a state-changing request from a browser must come from this origin.
 *
 * /healthz's details go to an operator: the token, or a loopback request
 * when no token is configured (or TRUST_LOOPBACK). A loopback request that
 * carries a proxy's forwarding headers came through a reverse proxy, so it
 * is never the local operator.
 */

export const COOKIE_NAME = "switchboard_operator";
/** How long a console login lasts. */
export const COOKIE_MAX_AGE_S = SESSION_MAX_AGE_S;

export interface OperatorAuthOptions {
  token?: string;
  /** PUBLIC_URL: its host is allowed, and its scheme decides the cookie's Secure flag. */
  publicUrl?: string;
  /** Specific bind addresses (not wildcards) of the listeners serving operator routes. */
  bindHosts?: string[];
  /** TRUST_LOOPBACK: a direct loopback request gets /healthz's details without the token even when one is configured. */
  trustLoopback?: boolean;
  /** Where login sessions are revoked (the database's kv store). Without it no login cookie is accepted. */
  kv?: KvStore;
  /** The clock login sessions expire by (tests inject one). */
  now?: () => number;
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

/** Headers a reverse proxy adds: a request carrying one did not start on this machine, whatever the socket says. */
const FORWARDING_HEADERS = ["x-forwarded-for", "forwarded", "x-real-ip"];

/** Whether a reverse proxy forwarded this request (one of its headers is there). */
export function forwardedByProxy(headers: Record<string, string | string[] | undefined>): boolean {
  return FORWARDING_HEADERS.some((h) => headers[h] !== undefined);
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
  readonly #sessions: LoginSessions | undefined;
  readonly #trustLoopback: boolean;
  readonly #allowedHosts = new Set<string>();
  readonly secureCookie: boolean;

  constructor(o: OperatorAuthOptions) {
    this.#token = o.token;
    this.#sessions = o.token && o.kv ? new LoginSessions(o.token, o.kv, o.now) : undefined;
    this.#trustLoopback = o.trustLoopback ?? false;
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

  /** The console's login sessions (only with a token and a store). */
  get sessions(): LoginSessions | undefined {
    return this.#sessions;
  }

  hostAllowed(hostHeader: string | undefined): boolean {
    if (!hostHeader) return false;
    const name = hostnameOf(hostHeader);
    return isLoopbackHostname(name) || this.#allowedHosts.has(name);
  }

  /** A bearer header carrying the token, or a login cookie of a live session. */
  async hasValidToken(headers: RequestFacts["headers"]): Promise<boolean> {
    if (!this.#token) return false;
    const auth = header(headers, "authorization");
    const m = auth ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
    if (m && sameSecret(m[1]!, this.#token)) return true;
    const cookie = readCookie(header(headers, "cookie"), COOKIE_NAME);
    if (cookie === undefined || !this.#sessions) return false;
    return (await this.#sessions.verify(cookie)).ok;
  }

  /** The login form's check: the token as typed. */
  tokenMatches(given: string): boolean {
    return this.#token !== undefined && sameSecret(given, this.#token);
  }

  /** Loopback from both ends: a local process asking for a local name, with no proxy's forwarding headers. */
  isLoopbackRequest(f: RequestFacts): boolean {
    return (
      isLoopbackAddress(f.remoteAddress) &&
      isLoopbackHostname(hostnameOf(header(f.headers, "host") ?? "")) &&
      isLoopbackHostname(hostnameOf(f.urlHost)) &&
      !forwardedByProxy(f.headers)
    );
  }

  /** Whether the caller is an operator (/healthz's details): the token, or loopback where loopback is trusted. */
  async isOperator(f: RequestFacts): Promise<boolean> {
    if ((!this.#token || this.#trustLoopback) && this.isLoopbackRequest(f)) return true;
    return this.hasValidToken(f.headers);
  }

  async check(f: RequestFacts): Promise<Verdict> {
    const host = header(f.headers, "host");
    if (!this.hostAllowed(host) || !this.hostAllowed(f.urlHost)) {
      return {
        ok: false,
        status: 403,
        reason: "host",
        error: "this host name is not allowed for the operator pages: use 127.0.0.1 or localhost, or set PUBLIC_URL to the address you open",
      };
    }
    // Without a token the operator pages are this machine's alone: a request a reverse proxy forwarded (its
    // headers say so) started elsewhere, whatever its Host says (as /healthz's details already judge it).
    if (!this.#token && forwardedByProxy(f.headers))
      return {
        ok: false,
        status: 401,
        reason: "auth",
        error:
          "this request came through a proxy, and the operator pages without OPERATOR_TOKEN are for this machine only: set OPERATOR_TOKEN to use them through the proxy",
      };
    const byToken = await this.hasValidToken(f.headers);
    if (this.#token && !byToken)
      return { ok: false, status: 401, reason: "auth", error: "sign in: send Authorization: Bearer <OPERATOR_TOKEN>, or log in at /login" };
    if (!["GET", "HEAD", "OPTIONS"].includes(f.method) && !this.sameOrigin(f.headers, byToken)) {
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
   * The one cross-site check of the operator surface (its routes, /login and
   * /logout). A browser always sends Origin on a POST; a script (curl,
   * Prometheus) sends none. A bearer header cannot be attached cross-site
   * without a CORS preflight this server never grants, so it needs no Origin.
   */
  sameOrigin(headers: RequestFacts["headers"], byToken = false): boolean {
    const origin = header(headers, "origin");
    const host = header(headers, "host");
    const site = header(headers, "sec-fetch-site");
    const bearer = byToken && header(headers, "authorization") !== undefined;
    // The browser's own word that the page is of another site outweighs any Origin.
    if (site !== undefined && site !== "same-origin" && site !== "none" && !bearer) return false;
    if (origin === undefined) return true;
    if (origin === "null") return false;
    return originMatchesHost(origin, host);
  }
}

/**
 * Whether a browser's Origin is this Host's: same host and port, the scheme's default port written or not
 * (a proxy may send `Host: bot.example.com:443`; an Origin never names a default port).
 */
export function originMatchesHost(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  try {
    const o = new URL(origin);
    return o.host === new URL(`${o.protocol}//${host}`).host;
  } catch {
    return false;
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
