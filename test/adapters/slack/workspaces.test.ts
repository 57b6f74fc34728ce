import { describe, it } from "vitest";
import {
  approvalsStayInTheirWorkspace,
  groupsByWorkspace,
  installerIsAdmin,
  orgWide,
  purgeOnUninstall,
  rotationThroughFailures,
  socketTwoWorkspaces,
  singleTokenBesideOAuth,
  twoWorkspaces,
  uninstallAndReinstall,
} from "./workspaces-scenarios.js";

describe("many Slack workspaces on one gateway (SQLite)", () => {
  it("two workspaces installed through /slack/install: each answered with its own token; the same channel ids kept apart", () => twoWorkspaces("sqlite"));
  it.each(["revoked-first", "uninstalled-first"] as const)(
    "uninstall (%s, each event twice): tokens gone, the queued reply failed as uninstalled, the other team answered, a reinstall works",
    (order) => uninstallAndReinstall("sqlite", order),
  );
  it("an org-wide install answers in two workspaces of the org with the org's token", () => orgWide("sqlite"));
  it("the installing user administers their workspace only (DM_POLICY=pairing)", () => installerIsAdmin("sqlite"));
  it("SLACK_PURGE_ON_UNINSTALL=true deletes the uninstalled workspace's sessions and transcripts, not the other's", () => purgeOnUninstall("sqlite"));
  it("ALLOW_GROUPS admits a workspace's channel by team/channel only; a bare channel id admits none", () => groupsByWorkspace("sqlite"));
  it("an expired rotating token whose refresh fails twice: the event waits unacknowledged, then is answered once with the new token", () =>
    rotationThroughFailures("sqlite"));
  it("Socket Mode: two installed workspaces' envelopes on one socket, each answered with its own token", () => socketTwoWorkspaces("sqlite"));
  it("an approval card cannot be decided from another workspace, even by its admin; the asker decides it in its own", () =>
    approvalsStayInTheirWorkspace("sqlite"));
  it("SLACK_BOT_TOKEN beside installs by OAuth is one more installation, answered with its own token", () => singleTokenBesideOAuth("sqlite"));
});
