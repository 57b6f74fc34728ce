/**
 * The OAuth install flow's two routes, built on @slack/oauth's
 * InstallProvider: `GET /slack/install` (gated by the install token when one
 * is set) sets the state cookie and redirects to Slack's authorize page;
 * `GET /slack/oauth_redirect` checks the state (InstallProvider: code,
 * state and cookie present and equal; SingleUseStateStore: signed, 10
 * minutes, once), exchanges the code with oauth.v2.access and stores the
 * installation. A refusal answers 400 with a page that says why.
 * InstallProvider speaks Node's request and response; the gateway's routes
 * speak HttpRequest and HttpResponse, so each call gets a small shim of the
 * few members it uses.
 */
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { ErrorCode, type Installation, InstallProvider, type InstallURLOptions } from "@slack/oauth";
import type { Logger } from "../../src/log.js";
import type { HttpHandler, HttpRequest, HttpResponse, SlackInstallations, SlackOAuthStates } from "../types.js";
import { boltLogger } from "./bolt-logger.js";
import { DatabaseInstallationStore } from "./installation-store.js";
import { SingleUseStateStore } from "./oauth-state.js";

export const INSTALL_PATH = "/slack/install";
export const OAUTH_REDIRECT_PATH = "/slack/oauth_redirect";

export interface InstallRoutesOptions {
  clientId: string;
  clientSecret: string;
  stateSecret: string;
  scopes: string[];
  userScopes?: string[];
  /** The callback's public URL (PUBLIC_URL + /slack/oauth_redirect), also set as a Redirect URL in the app. */
  redirectUri: string;
  /** When set, /slack/install needs it as ?token=, so a stranger cannot install the app. */
  installToken?: string;
  /** At most this many install links open at once (default MAX_OPEN_INSTALL_LINKS). */
  maxOpenLinks?: number;
  /** Web API base with the trailing slash (tests point it at a fake). */
  apiUrl?: string;
  installations: SlackInstallations;
  states: SlackOAuthStates;
  log: Logger;
}

/**
 * Install links open at once (each a state row for ten minutes): past this, /slack/install answers 503 until
 * some are used or expire. Without SLACK_INSTALL_TOKEN anyone may open one, and each writes a row: the cap
 * bounds what a stranger's loop can make the database hold. Real installs come far slower.
 */
export const MAX_OPEN_INSTALL_LINKS = 1000;

/** Errors that are the request's fault: 400 with the reason. Anything else is ours or Slack's: 500, logged. */
const REFUSALS = new Set<string>([ErrorCode.MissingStateError, ErrorCode.InvalidStateError, ErrorCode.MissingCodeError, ErrorCode.AuthorizationError]);

export function slackInstallRoutes(o: InstallRoutesOptions): { install: HttpHandler; callback: HttpHandler } {
  const provider = new InstallProvider({
    clientId: o.clientId,
    clientSecret: o.clientSecret,
    stateStore: new SingleUseStateStore(o.stateSecret, o.states),
    installationStore: new DatabaseInstallationStore(o.installations),
    // Straight to Slack's authorize page: the link an operator hands out is the "Add to Slack" button.
    directInstall: true,
    // The one Slack SDK log bridge: strings and error names only, never an object that could carry a token.
    logger: boltLogger(o.log),
    clientOptions: { ...(o.apiUrl !== undefined && { slackApiUrl: o.apiUrl }), retryConfig: { retries: 0 } },
  });
  const installOptions: InstallURLOptions = { scopes: o.scopes, redirectUri: o.redirectUri, ...(o.userScopes?.length && { userScopes: o.userScopes }) };

  const install: HttpHandler = async (req) => {
    if (o.installToken !== undefined && !sameText(req.query.get("token") ?? "", o.installToken))
      return page(403, "Install link needed", "This gateway installs only from the link its operator hands out (/slack/install?token=...). Ask them for it.");
    if ((await o.states.live(new Date())) >= (o.maxOpenLinks ?? MAX_OPEN_INSTALL_LINKS)) {
      o.log.warn(
        { max: o.maxOpenLinks ?? MAX_OPEN_INSTALL_LINKS },
        "a Slack install link was refused: too many are open (set SLACK_INSTALL_TOKEN so only your link installs)",
      );
      const busy = page(503, "Too many installs in progress", "Too many install links are open right now. Try again in a few minutes.");
      return { ...busy, headers: { ...busy.headers, "retry-after": "60" } };
    }
    const res = new ResponseShim();
    await provider.handleInstallPath(requestShim(req), res.asNode(), {}, installOptions);
    return res.response();
  };

  const callback: HttpHandler = async (req) => {
    const res = new ResponseShim();
    await provider.handleCallback(requestShim(req), res.asNode(), {
      success: (installation) => res.set(installedPage(installation)),
      failure: (err) => {
        const code = (err as { code?: string }).code ?? "";
        if (REFUSALS.has(code)) {
          o.log.warn({ code }, "a Slack install callback was refused; nothing was stored");
          res.set(page(400, "Install refused", `${err.message} Start again from the install link.`));
          return;
        }
        o.log.error({ code, err: { name: err.name, message: err.message } }, "a Slack install could not be completed");
        res.set(page(500, "Install failed", "The installation could not be completed; the gateway's log says why. Start again from the install link."));
      },
    });
    return res.response();
  };

  return { install, callback };
}

function installedPage(i: Installation): HttpResponse {
  const where = i.isEnterpriseInstall
    ? `the Enterprise Grid organization ${i.enterprise?.name ?? ""} (${i.enterprise?.id ?? ""}), every workspace of it`
    : `the workspace ${i.team?.name ?? ""} (${i.team?.id ?? ""})`;
  return page(200, "Installed", `Switchboard is installed in ${where}, as the bot user ${i.bot?.userId ?? ""}. You can close this page.`);
}

function page(status: number, title: string, text: string): HttpResponse {
  const body = `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p></body></html>`;
  return { status, headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }, body };
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The members of IncomingMessage InstallProvider reads: the URL (with its query) and the headers. */
function requestShim(req: HttpRequest): IncomingMessage {
  const query = req.query.toString();
  return { url: query ? `${req.path}?${query}` : req.path, headers: { host: "localhost", ...req.headers } } as unknown as IncomingMessage;
}

/** The members of ServerResponse InstallProvider calls, collected into one HttpResponse. */
class ResponseShim {
  private status = 200;
  private readonly headers: Record<string, string> = {};
  private body = "";
  private final: HttpResponse | undefined;

  set(r: HttpResponse): void {
    this.final = r;
  }

  asNode(): ServerResponse {
    return {
      getHeader: (n: string) => this.headers[n.toLowerCase()],
      setHeader: (n: string, v: string | string[]) => {
        this.headers[n.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v;
      },
      writeHead: (s: number) => {
        this.status = s;
      },
      end: (b?: string) => {
        this.body = b ?? "";
      },
    } as unknown as ServerResponse;
  }

  response(): HttpResponse {
    if (this.final) return { ...this.final, headers: { ...this.headers, ...this.final.headers } };
    return { status: this.status, headers: this.headers, body: this.body };
  }
}
