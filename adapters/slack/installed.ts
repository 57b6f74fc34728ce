/**
 * Installs by OAuth: the adapter's side of many workspaces. At start it
 * stores SLACK_BOT_TOKEN (when set too) as one more installation, mounts the
 * install routes, and builds the per-workspace resolution (SlackWorkspaces)
 * over the database's installations, reading every token through the token
 * refresher so a rotating one is renewed before it expires.
 */
import type { webApi } from "@slack/bolt";
import type { Logger } from "../../src/log.js";
import { type AdapterContext, AdapterSetupError, type SlackInstallations, type SlackPorts } from "../types.js";
import { INSTALL_PATH, OAUTH_REDIRECT_PATH, slackInstallRoutes } from "./install-routes.js";
import type { SlackIdentity } from "./normalize.js";
import { SlackTokenRefresher } from "./token-refresh.js";
import { SlackWorkspaces, UnknownWorkspace } from "./workspaces.js";

/** The app's OAuth credentials and the install flow's settings (SLACK_CLIENT_ID …). */
export interface SlackOAuthOptions {
  clientId: string;
  clientSecret: string;
  stateSecret: string;
  scopes: string[];
  userScopes?: string[];
  /** When set, /slack/install needs it as ?token=. */
  installToken?: string;
  /** PUBLIC_URL + /slack/oauth_redirect: the Redirect URL set in the app. */
  redirectUri: string;
  /** Token rotation's timing (tests shorten it); the defaults suit Slack's 12-hour tokens. */
  refresh?: { marginMs?: number; sweepEveryMs?: number; now?: () => number };
}

/** SLACK_BOT_TOKEN beside installs by OAuth: its workspace, from auth.test. */
export interface SingleInstallation {
  token: string;
  me: SlackIdentity;
}

export interface Installed {
  workspaces: SlackWorkspaces;
  ports: SlackPorts;
  stop(): Promise<void>;
  /** "" or what an operator must know (installations whose token refresh is failing), for /healthz. */
  problems(): string;
}

export async function startInstalled(
  o: SlackOAuthOptions,
  ctx: AdapterContext,
  opts: { log: Logger; clientOptions: ConstructorParameters<typeof webApi.WebClient>[1]; apiUrl: string | undefined; single: SingleInstallation | undefined },
): Promise<Installed> {
  const ports = ctx.slack;
  if (!ports)
    throw new AdapterSetupError(
      "Config",
      "Slack installs by OAuth (SLACK_CLIENT_ID) need the gateway's database for the installations; run the adapter under the gateway",
    );
  const { log } = opts;
  if (opts.single) await storeSingle(ports.installations, opts.single, log);
  const refresher = new SlackTokenRefresher({
    installations: ports.installations,
    locks: ports.locks,
    clientId: o.clientId,
    clientSecret: o.clientSecret,
    log,
    ...(opts.apiUrl !== undefined && { apiUrl: opts.apiUrl }),
    // A failed refresh is logged by the refresher with the team; counted here in switchboard_internal_errors_total{where="slack:token-refresh"}.
    onRefresh: (outcome) => {
      if (outcome === "failed") ctx.reportError?.("token-refresh", new Error("a Slack token refresh failed"));
    },
    ...o.refresh,
  });
  const workspaces = new SlackWorkspaces({ resolve: (key) => refresher.current(key), clientOptions: opts.clientOptions, log });
  const routes = slackInstallRoutes({
    clientId: o.clientId,
    clientSecret: o.clientSecret,
    stateSecret: o.stateSecret,
    scopes: o.scopes,
    ...(o.userScopes?.length && { userScopes: o.userScopes }),
    redirectUri: o.redirectUri,
    ...(o.installToken !== undefined && { installToken: o.installToken }),
    ...(opts.apiUrl !== undefined && { apiUrl: opts.apiUrl }),
    installations: ports.installations,
    states: ports.states,
    log,
  });
  // Public: the install link is what an operator hands out (gated by SLACK_INSTALL_TOKEN when set); the callback checks its signed, single-use state.
  ctx.route("GET", INSTALL_PATH, routes.install, { public: true });
  ctx.route("GET", OAUTH_REDIRECT_PATH, routes.callback, { public: true });
  refresher.start();
  log.info({ installations: (await ports.installations.list()).length }, "slack installs by OAuth: install from /slack/install");
  return {
    workspaces,
    ports,
    stop: () => refresher.stop(),
    problems: () => {
      const failing = refresher.problems().map((p) => p.teamId || p.enterpriseId);
      return failing.length
        ? `; token refresh failing for ${failing.slice(0, 5).join(", ")}${failing.length > 5 ? ` and ${failing.length - 5} more` : ""}`
        : "";
    },
  };
}

/** Stores SLACK_BOT_TOKEN's workspace as an installation, unless that workspace was installed by OAuth (whose token then serves it). */
async function storeSingle(installations: SlackInstallations, single: SingleInstallation, log: Logger): Promise<void> {
  const { me, token } = single;
  const key = { enterpriseId: me.enterpriseId ?? "", teamId: me.teamId };
  const existing = await installations.find(key);
  if (existing && existing.source !== "env") {
    log.info({ teamId: me.teamId }, "SLACK_BOT_TOKEN's workspace is also installed by OAuth: that installation's token serves it");
    return;
  }
  await installations.save({
    ...key,
    isEnterpriseInstall: false,
    teamName: null,
    enterpriseName: null,
    appId: me.appId ?? null,
    botToken: token,
    botUserId: me.botUserId,
    botId: me.botId ?? "",
    botScopes: existing?.botScopes ?? "",
    botRefreshToken: null,
    botExpiresAt: null,
    installerUserId: "",
    userToken: null,
    userScopes: null,
    userRefreshToken: null,
    userExpiresAt: null,
    source: "env",
  });
}

/** Bolt's error for an event whose workspace has no installation here (and only that: a database that failed is not it). */
export function isUnknownWorkspace(err: unknown): err is { original: UnknownWorkspace } {
  return (err as { original?: unknown } | null)?.original instanceof UnknownWorkspace;
}

/** Acknowledged (Bolt acks once the error handler returns), logged with the workspace, counted, never answered. */
export function unknownWorkspace(err: { original: UnknownWorkspace }, ctx: AdapterContext, log: Logger): void {
  ctx.dropped?.("unknown_workspace");
  const { teamId, enterpriseId } = err.original.ref;
  log.warn({ teamId, enterpriseId }, err.original.message);
}
