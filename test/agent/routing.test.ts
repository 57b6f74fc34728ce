/**
 * AGENTS_CONFIG's routes (src/agent/routing.ts): each field matches what it
 * says and nothing else, and the most specific rule wins in the documented
 * order (README "Agents and routing": sender > thread > chat > team/guild >
 * kind > platform > catch-all; the same fields: first in the file).
 */
import { describe, expect, it } from "vitest";
import type { Route, RouteMatch } from "../../src/config/agents.js";
import { FIELD_WEIGHT, matches, routeAgent, specificity, type Place } from "../../src/agent/routing.js";

const slackDm: Place = { platform: "slack", workspace: "T1", chatId: "D1", chatKind: "private", senderId: "U1" };
const slackThread: Place = { platform: "slack", workspace: "T1", chatId: "C1", threadId: "171.5", chatKind: "thread", senderId: "U2" };
const discordGroup: Place = { platform: "discord", workspace: "G1", chatId: "900", chatKind: "group", senderId: "42" };
const telegramGroup: Place = { platform: "telegram", chatId: "-100", chatKind: "group", senderId: "7" };

describe("a rule's fields", () => {
  const table: Array<[string, RouteMatch, Place, boolean]> = [
    ["catch-all", {}, telegramGroup, true],
    ["platform", { platform: "slack" }, slackDm, true],
    ["other platform", { platform: "slack" }, discordGroup, false],
    ["team", { team: "T1" }, slackThread, true],
    ["other team", { team: "T2" }, slackThread, false],
    ["team is Slack's: a Discord guild of the same id is not it", { team: "G1" }, discordGroup, false],
    ["guild", { guild: "G1" }, discordGroup, true],
    ["guild is Discord's", { guild: "T1" }, slackDm, false],
    ["no workspace", { team: "T1" }, telegramGroup, false],
    ["chat", { chat: "D1" }, slackDm, true],
    ["other chat", { chat: "D2" }, slackDm, false],
    ["chat by the id the platform's API takes", { chat: "C1" }, { ...slackThread, chatId: "T1/C1", replyChatId: "C1" }, true],
    ["chat by the envelope's id", { chat: "T1/C1" }, { ...slackThread, chatId: "T1/C1", replyChatId: "C1" }, true],
    ["thread", { thread: "171.5" }, slackThread, true],
    ["thread asked, none there", { thread: "171.5" }, discordGroup, false],
    ["kind private", { kind: "private" }, slackDm, true],
    ["kind private in a group", { kind: "private" }, telegramGroup, false],
    ["kind group", { kind: "group" }, telegramGroup, true],
    ["a thread is a group's place", { kind: "group" }, slackThread, true],
    ["kind group in a DM", { kind: "group" }, slackDm, false],
    ["sender", { sender: "U1" }, slackDm, true],
    ["other sender", { sender: "U9" }, slackDm, false],
    ["every field holds", { platform: "slack", team: "T1", chat: "C1", thread: "171.5", kind: "group", sender: "U2" }, slackThread, true],
    ["one field fails", { platform: "slack", team: "T1", chat: "C1", thread: "171.5", kind: "group", sender: "U1" }, slackThread, false],
  ];
  for (const [what, match, place, expected] of table) {
    it(`${what}: ${expected ? "matches" : "does not match"}`, () => expect(matches(match, place)).toBe(expected));
  }
});

describe("the most specific rule wins", () => {
  // The precedence the README documents, most specific first.
  const ORDER: Array<keyof RouteMatch> = ["sender", "thread", "chat", "team", "kind", "platform"];
  const place = slackThread;
  const field: Record<keyof RouteMatch, RouteMatch> = {
    sender: { sender: "U2" },
    thread: { thread: "171.5" },
    chat: { chat: "C1" },
    team: { team: "T1" },
    guild: { guild: "G1" },
    kind: { kind: "group" },
    platform: { platform: "slack" },
  };

  it("each field beats every less specific one alone, in either file order, and the catch-all loses to all", () => {
    for (let i = 0; i < ORDER.length; i++) {
      for (let j = i + 1; j < ORDER.length; j++) {
        const strong: Route = { match: field[ORDER[i]!], agent: "strong" };
        const weak: Route = { match: field[ORDER[j]!], agent: "weak" };
        expect(routeAgent([strong, weak], place).agent, `${ORDER[i]} over ${ORDER[j]}`).toBe("strong");
        expect(routeAgent([weak, strong], place).agent, `${ORDER[i]} over ${ORDER[j]} (listed after)`).toBe("strong");
      }
      expect(
        routeAgent(
          [
            { match: {}, agent: "all" },
            { match: field[ORDER[i]!], agent: "one" },
          ],
          place,
        ).agent,
      ).toBe("one");
    }
  });

  it("a more specific field outweighs all less specific ones together", () => {
    const routes: Route[] = [
      { match: { platform: "slack", team: "T1", kind: "group", chat: "C1" }, agent: "many" },
      { match: { thread: "171.5" }, agent: "thread" },
    ];
    expect(routeAgent(routes, place).agent).toBe("thread");
    expect(specificity({ thread: "x" })).toBeGreaterThan(specificity({ platform: "p", team: "t", kind: "group", chat: "c" }));
    expect(specificity({ sender: "x" })).toBeGreaterThan(specificity({ platform: "p", team: "t", kind: "group", chat: "c", thread: "h" }));
  });

  it("between rules with the same most specific field, the next field decides", () => {
    const routes: Route[] = [
      { match: { chat: "C1" }, agent: "chat" },
      { match: { chat: "C1", team: "T1" }, agent: "chat+team" },
    ];
    expect(routeAgent(routes, place).agent).toBe("chat+team");
  });

  it("the same fields: the first in the file wins; no match: default, with only itself to choose", () => {
    const routes: Route[] = [
      { match: { team: "T1" }, agent: "first" },
      { match: { team: "T1" }, agent: "second" },
    ];
    expect(routeAgent(routes, place)).toEqual({ agent: "first", choosable: ["first"], rule: 1 });
    expect(routeAgent(routes, telegramGroup)).toEqual({ agent: "default", choosable: ["default"] });
  });

  it("team and guild weigh the same (each is the workspace on its own platform)", () => {
    expect(FIELD_WEIGHT.team).toBe(FIELD_WEIGHT.guild);
    expect(
      routeAgent(
        [
          { match: { guild: "G1" }, agent: "guild" },
          { match: { kind: "group" }, agent: "kind" },
        ],
        discordGroup,
      ).agent,
    ).toBe("guild");
  });

  it("the routed agent comes first in what may be chosen, then the rule's choosable list without repeats", () => {
    const r = routeAgent([{ match: { sender: "U1" }, agent: "coder", choosable: ["support", "coder", "default"] }], slackDm);
    expect(r).toEqual({ agent: "coder", choosable: ["coder", "support", "default"], rule: 1 });
  });
});
