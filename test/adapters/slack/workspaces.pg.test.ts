import { describe, it } from "vitest";
import { orgWide, purgeOnUninstall, twoWorkspaces, uninstallAndReinstall } from "./workspaces-scenarios.js";

describe("many Slack workspaces on one gateway (PostgreSQL)", () => {
  it("two workspaces installed through /slack/install: each answered with its own token; the same channel ids kept apart", () => twoWorkspaces("postgresql"));
  it("uninstall (revoked first, each event twice): tokens gone, the queued reply failed as uninstalled, the other team answered, a reinstall works", () =>
    uninstallAndReinstall("postgresql", "revoked-first"));
  it("an org-wide install answers in two workspaces of the org with the org's token", () => orgWide("postgresql"));
  it("SLACK_PURGE_ON_UNINSTALL=true deletes the uninstalled workspace's sessions and transcripts, not the other's", () => purgeOnUninstall("postgresql"));
});
