import { readFileSync } from "node:fs";
import type { HttpRequest, HttpResponse } from "../adapter.js";
import { LoginFailures } from "./login-failures.js";
import { COOKIE_MAX_AGE_S, COOKIE_NAME, readCookie, type OperatorAuth } from "./operator-auth.js";

/**
 * The console's login: a plain HTML form (no script) that posts the
 * operator token; the answer sets an HttpOnly, SameSite=Strict cookie
 * holding a signed login session (login-sessions.ts) and sends the browser
 * back to the console. /logout revokes that session in the store.
 */

const PAGE_HEADERS: Record<string, string> = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  // Not no-referrer: under it a browser posts the form with "Origin: null", which the cross-site check must refuse.
  // same-origin still sends nothing to other sites.
  "referrer-policy": "same-origin",
  "cache-control": "no-store",
};

let template: string | undefined;
const page = (message: string, next: string): string => {
  template ??= readFileSync(new URL("./login.html", import.meta.url), "utf8");
  return template.replace("<!--message-->", message).replace("<!--next-->", escapeHtml(next));
};

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Only a local path: a login must never redirect to another site. */
const safeNext = (v: string | null | undefined): string => (v && /^\/(?!\/)[\w\-./?=&%]*$/.test(v) ? v : "/");

const crossSite = (): HttpResponse => ({
  status: 403,
  headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
  body: JSON.stringify({ error: "cross-site sign-in and sign-out are refused: open /login from this gateway's own address" }),
});

export function loginRoutes(auth: OperatorAuth, onFailure: (reason: string) => void, failures = new LoginFailures()) {
  const cookie = (value: string, maxAge: number) =>
    `${COOKIE_NAME}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${auth.secureCookie ? "; Secure" : ""}`;

  return {
    show: async (req: HttpRequest): Promise<HttpResponse> => {
      const message = auth.hasToken ? "" : `<p class="hint">No OPERATOR_TOKEN is set: the console is open on this machine. <a href="/">Open it</a>.</p>`;
      return { status: 200, headers: PAGE_HEADERS, body: page(message, safeNext(req.query.get("next"))) };
    },
    submit: async (req: HttpRequest): Promise<HttpResponse> => {
      // Another site's page must not sign this browser in (or out): the same check as every operator route.
      if (!auth.sameOrigin(req.headers)) {
        onFailure("origin");
        return crossSite();
      }
      const form = new URLSearchParams(req.rawBody.toString("utf8"));
      const next = safeNext(form.get("next"));
      // The token first: the right one always signs in, whatever other clients got wrong.
      if (auth.sessions && auth.tokenMatches(form.get("token") ?? "")) {
        return { status: 303, headers: { location: next, "set-cookie": cookie(await auth.sessions.issue(), COOKIE_MAX_AGE_S), "cache-control": "no-store" } };
      }
      if (failures.fail(req.remoteAddress ?? "unknown")) {
        onFailure("login-rate");
        return {
          status: 429,
          headers: { ...PAGE_HEADERS, "retry-after": "60" },
          body: page(`<p class="error" role="alert">Too many failed sign-ins from this address. Wait a minute and try again.</p>`, next),
        };
      }
      onFailure("login");
      return {
        status: 401,
        headers: PAGE_HEADERS,
        body: page(`<p class="error" role="alert" data-testid="login-error">That token is not right. It is the value of OPERATOR_TOKEN.</p>`, next),
      };
    },
    logout: async (req: HttpRequest): Promise<HttpResponse> => {
      if (!auth.sameOrigin(req.headers)) {
        onFailure("origin");
        return crossSite();
      }
      // Revoked in the store, not only cleared here: a copy of the cookie stops working too.
      const presented = auth.sessions?.parse(readCookie(single(req.headers.cookie), COOKIE_NAME));
      if (presented?.ok) await auth.sessions!.revoke(presented.session);
      return { status: 303, headers: { location: "/login", "set-cookie": cookie("", 0), "cache-control": "no-store" } };
    },
  };
}

const single = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? undefined : v);
