import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { App } from "../../src/gateway/app.js";
import { eventually, startApp } from "../support/app.js";
import type { ConformanceDriver, Place } from "./driver.js";

const counter = { n: 0 };
const uniq = (p: string) => `${p}${Date.now().toString(36)}${counter.n++}`;

/**
 * The conformance scenarios, written once. Every adapter runs them against
 * its platform fake through the real SDK, with the real gateway on SQLite.
 */
export function conformance(makeDriver: () => ConformanceDriver): void {
  const driver = makeDriver();
  describe(`conformance: ${driver.name}`, () => {
    let app: App;

    beforeAll(async () => {
      const { adapter, env } = await driver.setup();
      const r = await startApp("sqlite", [adapter], { DM_POLICY: "open", GROUP_REQUIRE_MENTION: "true", ...env });
      app = r.app;
      await driver.started?.(r.url);
    });
    afterAll(async () => {
      await app?.stop();
      await driver.teardown();
    });

    const replies = (place: Place, n: number, what: string) => eventually(() => driver.replies(place), (r) => r.length >= n, 15_000, what);

    async function sessionsOf(): Promise<number> {
      return (await app.registry.listAll({ includeArchived: true, limit: 1000 })).length;
    }

    it("DM continuity: a user's messages land in one session, answered in order", async () => {
      const place = { dm: uniq("u") };
      const before = await sessionsOf();
      await driver.say(place, place.dm, "first");
      await replies(place, 1, "the first reply");
      await driver.say(place, place.dm, "second");
      const r = await replies(place, 2, "the second reply");
      expect(r).toEqual(["echo: first", "echo: second"]);
      expect(await sessionsOf()).toBe(before + 1);
    });

    it("a group's members share the group's session", async () => {
      const place = { group: uniq("g") };
      const before = await sessionsOf();
      await driver.say(place, uniq("alice"), "hello from alice", { mention: true });
      await replies(place, 1, "alice's reply");
      await driver.say(place, uniq("bob"), "hello from bob", { mention: true });
      const r = await replies(place, 2, "bob's reply");
      expect(r[0]).toMatch(/hello from alice/);
      expect(r[1]).toMatch(/hello from bob/);
      expect(await sessionsOf()).toBe(before + 1);
    });

    it("/new starts a fresh session for the conversation", async () => {
      const place = { dm: uniq("u") };
      await driver.say(place, place.dm, "before");
      await replies(place, 1, "a reply");
      await driver.say(place, place.dm, "/new");
      const r = await replies(place, 2, "the /new notice");
      expect(r[1]).toMatch(/Started a fresh session/);
      await driver.say(place, place.dm, "/status");
      const status = (await replies(place, 3, "the status"))[2]!;
      expect(status).toMatch(/turns: 0/);
      expect(status).toMatch(/archived sessions: 1/);
    });

    it("a mention-gated group answers only when addressed, keeping the rest as context", async () => {
      const place = { group: uniq("g") };
      await driver.say(place, uniq("carol"), "just chatting among ourselves");
      await driver.say(place, uniq("dave"), "now for the bot", { mention: true });
      const r = await replies(place, 1, "the addressed reply");
      await new Promise((res) => setTimeout(res, 300));
      expect(driver.replies(place)).toHaveLength(1);
      expect(r[0]).toMatch(/now for the bot/);
      expect(r[0]).not.toMatch(/just chatting/);
    });

    it("a reply over the length limit arrives in pieces within the limit, nothing lost", async () => {
      const place = { dm: uniq("u") };
      const words = Array.from({ length: Math.ceil((driver.maxTextLength * 1.6) / 6) }, (_, i) => `w${i}`);
      await driver.say(place, place.dm, words.join(" "));
      const r = await replies(place, 2, "the chunked reply");
      await new Promise((res) => setTimeout(res, 300));
      const all = driver.replies(place);
      for (const piece of all) expect(piece.length).toBeLessThanOrEqual(driver.maxTextLength);
      const joined = all.join(" ");
      expect(joined).toContain("w0 ");
      expect(joined).toContain(words.at(-1)!);
      expect(r.length).toBeGreaterThanOrEqual(2);
    });

    it("a 429 with retry_after delays replies without dropping or reordering them", async () => {
      const place = { dm: uniq("u") };
      driver.rateLimitSends(1, 2);
      for (const t of ["r1", "r2", "r3"]) await driver.say(place, place.dm, t);
      const r = await replies(place, 3, "all three replies");
      expect(r).toEqual(["echo: r1", "echo: r2", "echo: r3"]);
    });

    it("a duplicate delivery is answered once", async () => {
      const place = { dm: uniq("u") };
      await driver.say(place, place.dm, "only once please");
      await driver.redeliverLast(place, place.dm);
      await replies(place, 1, "the reply");
      await new Promise((res) => setTimeout(res, 500));
      expect(driver.replies(place)).toEqual(["echo: only once please"]);
    });

    it("a thread gets its own session, and replies go into the thread", async () => {
      const group = uniq("g");
      const place = { group, thread: uniq("t") };
      await driver.say({ group }, uniq("erin"), "in the main channel", { mention: true });
      await replies({ group }, 1, "the channel reply");
      const before = await sessionsOf();
      await driver.say(place, uniq("erin"), "in the thread", { mention: true });
      const r = await replies(place, 1, "the thread reply");
      expect(r[0]).toMatch(/in the thread/);
      expect(await sessionsOf()).toBe(before + 1);
    });
  });
}
