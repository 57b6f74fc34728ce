/**
 * Probe: the user who installed the app administers THEIR workspace only
 * (README "Who may administer a workspace"; "a DM pairing ... in one workspace
 * admits nothing in another"). Anyone can become an installer of some
 * workspace (their own, through the install link), so an installer's
 * operator-only commands must not reach another workspace.
 *
 * Attack: Mallory installs the app in her own workspace T0ATK (she is its
 * installer, so its admin), DMs the bot in the victim workspace T0VIC
 * (DM_POLICY=pairing: she gets a pairing code there), then types
 * `/approve <code>` in her own workspace. She must not be admitted in T0VIC.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { gateway, replies } from "../../adapters/slack/workspaces-scenarios.js";

describe("probe: a workspace installer's admin power stays in their workspace", () => {
  it("/approve <pairing code> typed by workspace A's installer does not admit a stranger in workspace B", async () => {
    const g = await gateway("sqlite", { DM_POLICY: "pairing" });
    try {
      await g.install({ teamId: "T0VIC", installerUserId: "U0VICBOSS" });
      await g.install({ teamId: "T0ATK", installerUserId: "U0MALLORY" });
      const vic = g.sl.eventsFor({ teamId: "T0VIC" });
      const atk = g.sl.eventsFor({ teamId: "T0ATK" });

      // Mallory (a guest account in the victim workspace) asks for access there.
      expect(await g.post(vic.message({ channel: "D0VIC001", user: "U0MALGUEST", text: "let me in" }))).toBe(200);
      const [asked] = await replies(g, "D0VIC001", 1);
      const code = /pairing code is (\S+) \(/.exec(asked ?? "")?.[1];
      expect(code, asked).toBeTruthy();

      // In her own workspace she is the installer, an admin there.
      expect(await g.post(atk.message({ channel: "D0ATK001", user: "U0MALLORY", text: `/approve ${code}` }))).toBe(200);
      await replies(g, "D0ATK001", 1);

      // Back in the victim workspace: still a stranger (asked to pair again / refused), never answered by the agent.
      expect(await g.post(vic.message({ channel: "D0VIC001", user: "U0MALGUEST", text: "am I in?" }))).toBe(200);
      const after = await replies(g, "D0VIC001", 2);
      expect(after[1]).not.toBe("echo: am I in?");
      // Her own answer said the code is unknown: nothing of the other workspace's codes is told.
      expect((await replies(g, "D0ATK001", 1))[0]).toMatch(/is unknown/);

      // The victim workspace's own installer approves the same code there: that works.
      expect(await g.post(vic.message({ channel: "D0VICBOSS", user: "U0VICBOSS", text: `/approve ${code}` }))).toBe(200);
      expect((await replies(g, "D0VICBOSS", 1))[0]).toMatch(/Approved U0MALGUEST on slack/);
      expect(await g.post(vic.message({ channel: "D0VIC001", user: "U0MALGUEST", text: "and now?" }))).toBe(200);
      expect((await replies(g, "D0VIC001", 3))[2]).toBe("echo: and now?");
    } finally {
      await g.stop();
    }
  });

  it("/budget (README: operators in ADMIN_USERS only) is refused to a workspace installer, who could otherwise read and reset every workspace's budgets", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "probe-slack-budget-"));
    const agents = path.join(dir, "agents.json");
    fs.writeFileSync(agents, JSON.stringify({ budgets: [{ per: "global", period: "month", tokens: 1000 }] }));
    const g = await gateway("sqlite", { AGENTS_CONFIG: agents });
    try {
      await g.install({ teamId: "T0BATK", installerUserId: "U0BMALLORY" });
      const atk = g.sl.eventsFor({ teamId: "T0BATK" });
      expect(await g.post(atk.message({ channel: "D0BATK01", user: "U0BMALLORY", text: "/budget reset global/month/tokens" }))).toBe(200);
      const [answer] = await replies(g, "D0BATK01", 1);
      expect(answer).toMatch(/for operators only/);
    } finally {
      await g.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
