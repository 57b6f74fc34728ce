/**
 * Shared by the token rotation tests: an install of a rotating token through
 * the fake's real oauth.v2.access code exchange (the WebClient), saved by
 * @slack/oauth's InstallationStore over the database as InstallProvider
 * saves it, and the refresh calls the fake saw.
 */
import { Writable } from "node:stream";
import { webApi } from "@slack/bolt";
import { DatabaseInstallationStore } from "../../../adapters/slack/installation-store.js";
import { SlackTokenRefresher, type SlackTokenRefresherOptions } from "../../../adapters/slack/token-refresh.js";
import { createLogger } from "../../../src/log.js";
import type { Database } from "../../../src/store/db.js";
import { LeaseStore } from "../../../src/store/leases.js";
import { SlackInstallationStore } from "../../../src/store/slack-installations.js";
import type { FakeSlack } from "../../fakes/index.js";

export const client = (sl: FakeSlack, token?: string) => new webApi.WebClient(token, { slackApiUrl: sl.apiUrl, retryConfig: { retries: 0 } });

/** Installs the app in `teamId` with a token that expires `expiresIn` seconds after `nowMs` (InstallProvider's arithmetic). */
export async function installRotating(sl: FakeSlack, rows: SlackInstallationStore, teamId: string, expiresIn: number, nowMs: number) {
  const r = await client(sl).oauth.v2.access({
    client_id: sl.oauth.clientId,
    client_secret: sl.oauth.clientSecret,
    code: sl.oauth.code({ teamId, expiresIn }),
  });
  const auth = await client(sl, r.access_token).auth.test();
  await new DatabaseInstallationStore(rows).storeInstallation({
    team: { id: r.team!.id!, name: r.team!.name! },
    enterprise: undefined,
    user: { id: r.authed_user!.id!, token: undefined, scopes: undefined },
    bot: {
      token: r.access_token!,
      refreshToken: r.refresh_token!,
      expiresAt: Math.floor(nowMs / 1000) + r.expires_in!,
      scopes: r.scope!.split(","),
      id: auth.bot_id!,
      userId: r.bot_user_id!,
    },
    appId: r.app_id!,
    tokenType: "bot",
    isEnterpriseInstall: false,
    authVersion: "v2",
  });
  return { token: r.access_token!, refreshToken: r.refresh_token! };
}

/** The refresh grants the fake was asked for (the install's code exchange is not one). */
export const refreshCalls = (sl: FakeSlack) => sl.callsTo("oauth.v2.access").filter((c) => c.params.grant_type === "refresh_token");

/** A JSON logger into an array, to check what was said and that no secret was. */
export function capturedLog() {
  const lines: string[] = [];
  const log = createLogger({
    level: "info",
    format: "json",
    destination: new Writable({
      write: (c: Buffer, _e, cb) => {
        lines.push(c.toString("utf8"));
        cb();
      },
    }),
  });
  return { log, lines };
}

/** A refresher over one Database's stores, talking to the fake. */
export function refresherOn(db: Database, sl: FakeSlack, opts: Partial<SlackTokenRefresherOptions> & Pick<SlackTokenRefresherOptions, "log">) {
  return new SlackTokenRefresher({
    installations: new SlackInstallationStore(db),
    locks: new LeaseStore(db),
    clientId: sl.oauth.clientId,
    clientSecret: sl.oauth.clientSecret,
    apiUrl: sl.apiUrl,
    ...opts,
  });
}
