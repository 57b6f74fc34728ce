/**
 * Probe: README "An event from a workspace the app is not installed in is
 * acknowledged, logged with its team id and counted
 * (switchboard_inbound_total{outcome="unknown_workspace"}), never answered",
 * for the two other doors existing tests do not try: a slash command and a
 * button press (block_actions) from a workspace with no installation.
 */
import { describe, expect, it } from "vitest";
import { gateway, metric, replies } from "../../adapters/slack/workspaces-scenarios.js";

describe("probe: commands and presses from a workspace the app is not installed in", () => {
  it("acked (200, no body), counted as unknown_workspace, nothing sent; an installed workspace is answered after them", async () => {
    const g = await gateway("sqlite");
    try {
      await g.install({ teamId: "T0HOMEWS" });
      const stranger = g.sl.eventsFor({ teamId: "T0NOTHERE" });
      const before = await metric(g, "switchboard_inbound_total", 'outcome="unknown_workspace"');
      const cmd = await g.sl.postCommand(
        `${g.url}/slack/commands`,
        stranger.slashCommand({ command: "/switchboard", text: "hello", user: "U0STRAN", channel: "D0STRAN1" }),
      );
      expect([cmd.status, cmd.body]).toEqual([200, ""]);
      const message = {
        ts: "1712345678.000100",
        blocks: [{ type: "actions", block_id: "b", elements: [{ type: "button", action_id: "approval:approve:00000000-0000-4000-8000-000000000000" }] }],
      };
      const press = await g.sl.postInteraction(
        `${g.url}/slack/interactions`,
        stranger.blockActions({ user: "U0STRAN", channel: "D0STRAN1", message, actionId: "approval:approve:00000000-0000-4000-8000-000000000000" }),
      );
      expect([press.status, press.body]).toEqual([200, ""]);
      expect(await metric(g, "switchboard_inbound_total", 'outcome="unknown_workspace"')).toBe(before + 2);
      const home = g.sl.eventsFor({ teamId: "T0HOMEWS" });
      expect(await g.post(home.message({ channel: "D0HOMEW1", user: "U0HOME", text: "hi" }))).toBe(200);
      expect(await replies(g, "D0HOMEW1", 1)).toEqual(["echo: hi"]);
      expect(g.sl.sent({ channel: "D0STRAN1" })).toEqual([]);
      expect(g.sl.callsTo("chat.postEphemeral")).toEqual([]);
    } finally {
      await g.stop();
    }
  });
});
