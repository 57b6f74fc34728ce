import { readFileSync } from "node:fs";
import type { HttpRequest, HttpResponse } from "../adapter.js";
import { COOKIE_MAX_AGE_S, COOKIE_NAME, type OperatorAuth } from "./operator-auth.js";

/**
 * The console's login: a plain HTML form (no script) that posts the
 * operator token; the answer sets an HttpOnly, SameSite=Strict cookie
 * derived from the token and sends the browser back to the console.
 */

const PAGE_HEADERS: Record<string, string> = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

/** Failed logins allowed per minute (the whole process): guessing a 32-byte token is hopeless, but the log should not fill. */
const FAILURES_PER_MINUTE = 10;

let template: string | undefined;
const page = (message: string, next: string): string => {
  template ??= readFileSync(new URL("./login.html", import.meta.url), "utf8");
  return template.replace("<!--message-->", message).replace("<!--next-->", escapeHtml(next));
};

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Only a local path: a login must never redirect to another site. */
const safeNext = (v: string | null | undefined): string => (v && /^\/(?!\/)[\w\-./?=&%]*$/.test(v) ? v : "/");

export function loginRoutes(auth: OperatorAuth, onFailure: (reason: string) => void) {
  const failures: number[] = [];
  const cookie = (value: string, maxAge: number) =>
    `${COOKIE_NAME}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${auth.secureCookie ? "; Secure" : ""}`;

  return {
    show: async (req: HttpRequest): Promise<HttpResponse> => {
      const message = auth.hasToken ? "" : `<p class="hint">No OPERATOR_TOKEN is set: the console is open on this machine. <a href="/">Open it</a>.</p>`;
      return { status: 200, headers: PAGE_HEADERS, body: page(message, safeNext(req.query.get("next"))) };
    },
    submit: async (req: HttpRequest): Promise<HttpResponse> => {
      const form = new URLSearchParams(req.rawBody.toString("utf8"));
      const next = safeNext(form.get("next"));
      const now = Date.now();
      while (failures.length && failures[0]! < now - 60_000) failures.shift();
      if (failures.length >= FAILURES_PER_MINUTE) {
        onFailure("login-rate");
        return {
          status: 429,
          headers: { ...PAGE_HEADERS, "retry-after": "60" },
          body: page(`<p class="error" role="alert">Too many failed sign-ins. Wait a minute and try again.</p>`, next),
        };
      }
      const value = auth.cookieValue;
      if (!value || !auth.tokenMatches(form.get("token") ?? "")) {
        failures.push(now);
        onFailure("login");
        return {
          status: 401,
          headers: PAGE_HEADERS,
          body: page(`<p class="error" role="alert" data-testid="login-error">That token is not right. It is the value of OPERATOR_TOKEN.</p>`, next),
        };
      }
      return { status: 303, headers: { location: next, "set-cookie": cookie(value, COOKIE_MAX_AGE_S), "cache-control": "no-store" } };
    },
    logout: async (): Promise<HttpResponse> => ({ status: 303, headers: { location: "/login", "set-cookie": cookie("", 0), "cache-control": "no-store" } }),
  };
}
