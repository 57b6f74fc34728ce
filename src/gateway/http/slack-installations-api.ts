import type { SlackInstallationStore, SlackInstallationSummary } from "../../store/slack-installations.js";
import type { HttpHandler } from "../adapter.js";
import { json } from "./server.js";

/**
 * What the console shows of an installation, built column by column from the store's
 * summary (which has no token columns): a new secret column can never reach the page.
 */
function installation(i: SlackInstallationSummary) {
  const orgWide = i.teamId === "";
  return {
    teamId: i.teamId,
    enterpriseId: i.enterpriseId,
    orgWide,
    name: (orgWide ? i.enterpriseName : i.teamName) ?? null,
    appId: i.appId,
    botUserId: i.botUserId,
    scopes: i.botScopes.split(",").filter(Boolean),
    installerUserId: i.installerUserId,
    source: i.source,
    installedAt: i.installedAt.toISOString(),
    expiresAt: i.botExpiresAt?.toISOString() ?? null,
  };
}

/**
 * GET /api/slack/installations (operator): the Slack workspaces and Enterprise Grid orgs the
 * app is installed in, oldest first. Never a token: the store's listing selects none.
 */
export function mountSlackInstallationsApi(
  route: (method: "GET" | "POST", path: string, handler: HttpHandler) => void,
  store: Pick<SlackInstallationStore, "list">,
): void {
  route("GET", "/api/slack/installations", async () => json(200, { installations: (await store.list()).map(installation) }));
}
