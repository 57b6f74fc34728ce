import { describe, expect, it } from "vitest";
import type { App } from "../../src/gateway/app.js";
import type { Config } from "../../src/config.js";
import { eventually } from "../support/app.js";
import type { ConformanceDriver, GroupDriver, Place } from "./driver.js";

type Policy = Partial<Pick<Config, "DM_POLICY" | "GROUP_POLICY" | "ALLOW_GROUPS" | "ADMIN_USERS" | "GROUP_UNADMITTED">>;

/**
 * Issue 26, item 1: groups are no open door. Under DM_POLICY=pairing a
 * stranger's group gets no answer (or the bot leaves it) until an admin
 * admits it or ALLOW_GROUPS lists it; and nobody who does not pass the DM
 * policy approves a tool call, their own included. Run by suite.ts on every
 * adapter with a GroupDriver, through the real SDK.
 */
export function groupAccessScenarios(o: { driver: ConformanceDriver; app: () => App; uniq: (p: string) => string; clock: string }): void {
  const { driver, uniq } = o;
  describe.runIf(driver.groups)("group access (GROUP_POLICY)", () => {
    const g = (): GroupDriver => driver.groups!;
    const platform = () => o.app().gateway.adapters[0]!.platform;
    const admin = uniq("admin");
    const adminEntry = () => `${platform()}:${g().userId(admin)}`;

    /** Runs `fn` with these settings, as if the gateway had been started with them (the gateway reads its config object live). */
    async function withPolicy(patch: Policy, fn: () => Promise<void>): Promise<void> {
      const config = o.app().config as Record<string, unknown>;
      const saved = Object.fromEntries(Object.keys(patch).map((k) => [k, config[k]]));
      Object.assign(config, patch);
      try {
        await fn();
      } finally {
        Object.assign(config, saved);
      }
    }
    const refusedSoFar = async (): Promise<number> => ((await o.app().metrics.groupsUnadmitted?.get())?.values ?? []).reduce((n, v) => n + v.value, 0);
    /** Waits until the gateway refused `n` more group messages (the cause) or the chat shows something; then it must show nothing. */
    const refused = async (place: Place, before: number, n: number, what: string) => {
      const seen = await eventually(
        async () => ({ count: await refusedSoFar(), shown: driver.replies(place) }),
        (s) => s.count >= before + n || s.shown.length > 0,
        15_000,
        what,
      );
      expect(seen.shown).toEqual([]);
    };
    const replies = (place: Place, re: RegExp, what: string) =>
      eventually(
        () => driver.replies(place),
        (r) => r.some((x) => re.test(x)),
        15_000,
        what,
      );

    it("under DM_POLICY=pairing a stranger's group gets no answer; an admin's /allowgroup admits it, then it is answered", async () => {
      await withPolicy({ DM_POLICY: "pairing", GROUP_POLICY: undefined, ADMIN_USERS: [adminEntry()] }, async () => {
        const place = { group: uniq("g") };
        const stranger = uniq("mallory");
        const before = await refusedSoFar();
        await driver.say(place, stranger, "hello, bot", { mention: true });
        await driver.say(place, stranger, "/status");
        await refused(place, before, 2, "both refusals counted");
        await driver.say(place, admin, "/allowgroup");
        await replies(place, /This group is admitted/, "the admission notice");
        await driver.say(place, stranger, "hello again", { mention: true });
        const r = await replies(place, /echo: .*hello again/, "the answer once admitted");
        // The refused message was handled, never replayed into the agent later.
        expect(r.join("\n")).not.toMatch(/hello, bot/);
      });
    });

    it("threads belong to their group: admitting the group from one thread admits its other threads", async () => {
      await withPolicy({ DM_POLICY: "pairing", GROUP_POLICY: "pairing", ADMIN_USERS: [adminEntry()] }, async () => {
        const group = uniq("g");
        const a = { group, thread: uniq("ta") };
        const b = { group, thread: uniq("tb") };
        const stranger = uniq("trudy");
        const before = await refusedSoFar();
        await driver.say(b, stranger, "anyone in this thread?", { mention: true });
        await refused(b, before, 1, "the thread message refused");
        await driver.say(a, admin, "/allowgroup");
        await replies(a, /This group is admitted/, "the admission notice in the thread");
        await driver.say(b, stranger, "and now?", { mention: true });
        await replies(b, /echo: .*and now\?/, "the other thread answered");
      });
    });

    it("GROUP_UNADMITTED=leave: addressed in a group it was not admitted to, the bot leaves it without a word", async () => {
      await withPolicy({ DM_POLICY: "pairing", GROUP_POLICY: "pairing", GROUP_UNADMITTED: "leave" }, async () => {
        const place = g().separateGroup(uniq("lone"));
        const before = await refusedSoFar();
        await driver.say(place, uniq("stranger"), "talk to me", { mention: true });
        await eventually(
          () => g().hasLeft(place),
          (left) => left,
          15_000,
          "the platform recording the bot's leave",
        );
        await refused(place, before, 1, "the leave counted");
      });
    });

    it("ALLOW_GROUPS admits a listed group under DM_POLICY=pairing; the others stay closed", async () => {
      const place = { group: uniq("g") };
      const other = { group: uniq("g") };
      await withPolicy({ DM_POLICY: "pairing", GROUP_POLICY: undefined, ALLOW_GROUPS: [`${platform()}:${g().chatId(place)}`] }, async () => {
        const before = await refusedSoFar();
        await driver.say(other, uniq("walter"), "not listed?", { mention: true });
        await refused(other, before, 1, "the unlisted group refused");
        await driver.say(place, uniq("walter"), "listed?", { mention: true });
        await replies(place, /echo: .*listed\?/, "the answer in the listed group");
      });
    });

    it("a stranger in an open group cannot approve their own tool call, by button or /approve; an admin can", async () => {
      await withPolicy({ DM_POLICY: "pairing", GROUP_POLICY: "open", ADMIN_USERS: [adminEntry()] }, async () => {
        const ap = driver.approvals!;
        const place = { group: uniq("g") };
        const stranger = uniq("eve");
        await driver.say(place, stranger, `${o.clock} for me`, { mention: true });
        const [card] = await eventually(
          () => ap.cards(place),
          (c) => c.length >= 1,
          15_000,
          "the approval card",
        );
        await ap.click(place, stranger, card!.messageId, "approve");
        const refusal = await eventually(
          () => ap.privateAnswers(place, stranger),
          (a) => a.length >= 1,
          15_000,
          "the private refusal",
        );
        expect(refusal[0]).toMatch(/Only someone this bot already talks to .* Send the bot a direct message to ask for access\./);
        const [row] = await o.app().db.query("test-approval", o.app().db.q.selectFrom("Approval").select("id").where("cardMessageId", "=", card!.messageId));
        await driver.say(place, stranger, `/approve ${row!.id}`);
        await replies(place, /Only someone this bot already talks to/, "the typed /approve refused");
        expect(ap.cards(place)[0]!.buttons).toBe(true);
        expect(driver.replies(place).some((r) => r.includes("the tool said"))).toBe(false);
        await ap.click(place, admin, card!.messageId, "approve");
        await replies(place, /the tool said: UTC:/, "the answer after the admin approved");
      });
    });
  });
}
