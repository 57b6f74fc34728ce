/**
 * Forgery and access, through the real gateway, the real adapters (Bolt,
 * grammY) and the platform fakes: bad signatures and secrets get 401 and
 * process nothing; unknown DMs never reach the agent; no command lets one
 * chat read or take over another chat's session.
 */
import { afterEach, describe, expect, it } from "vitest";
import { SlackAdapter } from "../../adapters/slack/index.js";
import { TelegramAdapter } from "../../adapters/telegram/index.js";
import { FakeSlack } from "../fakes/slack.js";
import { FakeTelegram, type TgChat, type TgUser } from "../fakes/telegram.js";
import { freshDatabaseUrl } from "../support/db.js";
import { boot, inboundStatuses, report, sleep, slowEcho, until, type Booted } from "./helpers.js";
import { prisma } from "../support/prisma.js";

const SECRET = "webhook_Secret-42";

let booted: Booted | undefined;
let sl: FakeSlack | undefined;
let tg: FakeTelegram | undefined;

afterEach(async () => {
  await booted?.app.stop().catch(() => undefined);
  booted = undefined;
  await sl?.close();
  sl = undefined;
  await tg?.close();
  tg = undefined;
});

async function inboundMetric(b: Booted, platform: string): Promise<number> {
  const text = await (await fetch(`${b.url}/metrics`)).text();
  let n = 0;
  for (const line of text.split("\n"))
    if (line.startsWith("switchboard_inbound_total{") && line.includes(`platform="${platform}"`)) n += Number(line.split(" ").pop());
  return n;
}

async function inboundRows(b: Booted): Promise<number> {
  return prisma(b.app.db).read((c) => c.inboundEvent.count());
}

describe("Slack: forged requests", () => {
  it("bad, stale and missing signatures get 401 and 0 events are processed", async () => {
    sl = new FakeSlack();
    await sl.start();
    const agentCalls: string[] = [];
    booted = await boot(
      await freshDatabaseUrl("sqlite"),
      [new SlackAdapter({ botToken: sl.botToken, signingSecret: sl.signingSecret, apiUrl: sl.apiUrl })],
      {},
      { agentFactory: slowEcho(0, agentCalls) },
    );
    const url = `${booted.url}/slack/events`;
    const now = Math.floor(Date.now() / 1000);
    const statuses: Record<string, number> = {};
    const body = () => sl!.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "forged" });
    statuses.wrongSecret = (await sl.postEvent(url, body(), { secret: "not-the-secret" })).status;
    statuses.stale = (await sl.postEvent(url, body(), { timestamp: now - 301 })).status;
    statuses.future = (await sl.postEvent(url, body(), { timestamp: now + 600 })).status;
    statuses.zeroSignature = (await sl.postEvent(url, body(), { signature: `v0=${"0".repeat(64)}` })).status;
    statuses.garbageSignature = (await sl.postEvent(url, body(), { signature: "garbage" })).status;
    statuses.missingBoth = (await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body()) })).status;
    statuses.missingSignature = (
      await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", "x-slack-request-timestamp": String(now) },
        body: JSON.stringify(body()),
      })
    ).status;
    statuses.commandsWrongSecret = (
      await sl.postCommand(
        `${booted.url}/slack/commands`,
        sl.events.slashCommand({ command: "/switchboard", text: "status", user: "U0ALICE", channel: "D0DM0001" }),
        { secret: "nope" },
      )
    ).status;
    await sleep(200);
    const forgedRows = await inboundRows(booted);
    const forgedMetric = await inboundMetric(booted, "slack");
    // Control: a correctly signed event is processed (so "0" above means refused, not broken).
    const good = (await sl.postEvent(url, sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "genuine" }))).status;
    await until(() => agentCalls.length > 0, 10_000, "the genuine event");
    report("forgery-slack", {
      ...statuses,
      forgedInboundRows: forgedRows,
      forgedInboundMetric: forgedMetric,
      genuineStatus: good,
      agentCalls: agentCalls.length,
    });
    for (const [k, v] of Object.entries(statuses)) expect([k, v]).toEqual([k, 401]);
    expect(forgedRows).toBe(0);
    expect(forgedMetric).toBe(0);
    expect(good).toBe(200);
    expect(agentCalls).toEqual(["genuine"]);
  });
});

/** A Telegram bot in webhook mode behind the real gateway (the route is on the gateway's server). */
async function telegramGateway(
  env: Record<string, string>,
  agentCalls: string[],
): Promise<{ hook: string; alice: TgUser; bob: TgUser; say: (chat: TgChat, from: TgUser, text: string) => Promise<number> }> {
  tg = new FakeTelegram();
  await tg.start();
  const adapter = new TelegramAdapter({ token: tg.token, apiRoot: tg.apiRoot, mode: "webhook", webhookSecret: SECRET });
  booted = await boot(await freshDatabaseUrl("sqlite"), [adapter], env, { agentFactory: slowEcho(0, agentCalls) });
  const hook = `${booted.url}/telegram/${tg.botUser.id}`;
  const alice = tg.user("Alice");
  const bob = tg.user("Bob");
  return {
    hook,
    alice,
    bob,
    say: async (chat, from, text) => (await tg!.deliverWebhook(hook, tg!.build.message({ chat, from, text }), SECRET)).status,
  };
}

const texts = (chatId: number) => tg!.sent({ chatId }).map((m) => m.text);

async function replyTo(chatId: number, n: number): Promise<string> {
  await until(() => texts(chatId).length >= n, 10_000, `reply ${n} in chat ${chatId}`);
  return texts(chatId)[n - 1] ?? "";
}

describe("Telegram: forged webhook", () => {
  it("a wrong or missing secret gets 401 and nothing is recorded", async () => {
    const agentCalls: string[] = [];
    const t = await telegramGateway({}, agentCalls);
    const dm = tg!.privateChat(t.alice);
    const u = () => tg!.build.message({ chat: dm, from: t.alice, text: "forged" });
    const wrong = (await tg!.deliverWebhook(t.hook, u(), "wrong_secret")).status;
    const missing = (await tg!.deliverWebhook(t.hook, u())).status;
    const prefix = (await tg!.deliverWebhook(t.hook, u(), SECRET.slice(0, -1))).status;
    const longer = (await tg!.deliverWebhook(t.hook, u(), `${SECRET}x`)).status;
    await sleep(200);
    const rows = await inboundRows(booted!);
    const metric = await inboundMetric(booted!, "telegram");
    const good = await t.say(dm, t.alice, "genuine");
    await until(() => agentCalls.length > 0, 10_000, "the genuine update");
    report("forgery-telegram-webhook", {
      wrong,
      missing,
      prefix,
      longer,
      forgedInboundRows: rows,
      forgedInboundMetric: metric,
      genuineStatus: good,
      agentCalls: agentCalls.length,
    });
    expect([wrong, missing, prefix, longer]).toEqual([401, 401, 401, 401]);
    expect(rows).toBe(0);
    expect(metric).toBe(0);
    expect(good).toBe(200);
    expect(agentCalls).toEqual(["genuine"]);
  });
});

describe("DM access policy", () => {
  it("DM_POLICY=pairing: an unknown user gets a pairing code, nothing reaches the agent", async () => {
    const agentCalls: string[] = [];
    const t = await telegramGateway({ DM_POLICY: "pairing" }, agentCalls);
    const dm = tg!.privateChat(t.alice);
    const statuses = [
      await t.say(dm, t.alice, "hello bot"),
      await t.say(dm, t.alice, "/new"),
      await t.say(dm, t.alice, "/status"),
      await t.say(dm, t.alice, "/approve 123456"),
    ];
    await until(() => texts(dm.id).length >= 4, 10_000, "pairing replies");
    await booted!.app.gateway.idle();
    await sleep(200);
    const replies = texts(dm.id);
    const sessions = await prisma(booted!.app.db).read((c) => c.session.count());
    report("access-pairing", {
      messages: statuses.length,
      replies: replies.length,
      pairingReplies: replies.filter((r) => /pairing code/i.test(r)).length,
      agentCalls: agentCalls.length,
      sessionsCreated: sessions,
      inbound: await inboundStatuses(booted!.app),
    });
    expect(statuses).toEqual([200, 200, 200, 200]);
    expect(replies.every((r) => /pairing code|approval/i.test(r))).toBe(true);
    expect(agentCalls).toEqual([]);
    expect(sessions).toBe(0);
  });

  it("DM_POLICY=allowlist: an unknown user is denied, nothing reaches the agent", async () => {
    const agentCalls: string[] = [];
    const t = await telegramGateway({ DM_POLICY: "allowlist", ALLOW_FROM: "telegram:1" }, agentCalls);
    const dm = tg!.privateChat(t.alice);
    for (const text of ["hello bot", "/new", "/sessions", "/resume 1"]) await t.say(dm, t.alice, text);
    await until(() => texts(dm.id).length >= 4, 10_000, "deny replies");
    await booted!.app.gateway.idle();
    const denied = texts(dm.id);
    report("access-allowlist", {
      messages: 4,
      replies: denied.length,
      denials: denied.filter((r) => /allowlist/i.test(r)).length,
      agentCalls: agentCalls.length,
    });
    expect(denied.every((r) => /allowlist/i.test(r))).toBe(true);
    expect(agentCalls).toEqual([]);
  });
});

describe("no command crosses chats", () => {
  it("/resume <another chat's session id> is refused and the binding is unchanged", async () => {
    const agentCalls: string[] = [];
    const t = await telegramGateway({ DM_POLICY: "open" }, agentCalls);
    const aliceDm = tg!.privateChat(t.alice);
    const bobDm = tg!.privateChat(t.bob);
    await t.say(aliceDm, t.alice, "alice secret-pineapple");
    // /status answers at once, even while a turn runs: wait for the echo so the replies come in a known order.
    await replyTo(aliceDm.id, 1);
    await t.say(aliceDm, t.alice, "/status");
    const aliceSession = /session: (\S+)/.exec(await replyTo(aliceDm.id, 2))?.[1];
    await t.say(bobDm, t.bob, "bob hello");
    await replyTo(bobDm.id, 1);
    await t.say(bobDm, t.bob, "/status");
    const bobSession = /session: (\S+)/.exec(await replyTo(bobDm.id, 2))?.[1];
    expect(aliceSession).toBeTruthy();
    expect(bobSession).toBeTruthy();
    await t.say(bobDm, t.bob, `/resume ${aliceSession}`);
    const refusal = await until(() => texts(bobDm.id).length >= 3, 8_000, "a refusal").then((ok) => (ok ? texts(bobDm.id)[2]! : "(no reply)"));
    await t.say(bobDm, t.bob, "/status");
    const after = await until(() => texts(bobDm.id).length >= 4, 8_000, "status after").then(() => texts(bobDm.id).at(-1) ?? "");
    const bindingAfter = /session: (\S+)/.exec(after)?.[1];
    const stuck = (await inboundStatuses(booted!.app)).received ?? 0;
    report("resume-foreign-session", {
      refusal,
      bindingUnchanged: bindingAfter === bobSession,
      aliceTurnsLeakedToBob: texts(bobDm.id).filter((x) => x.includes("pineapple")).length,
      inboundLeftUnhandled: stuck,
    });
    expect(bindingAfter).toBe(bobSession);
    expect(texts(bobDm.id).some((x) => x.includes("pineapple"))).toBe(false);
    expect(refusal).toMatch(/not found in this chat/i);
    expect(stuck).toBe(0);
  });

  it("a group member cannot read a DM session through any command", async () => {
    const agentCalls: string[] = [];
    const t = await telegramGateway({ DM_POLICY: "open" }, agentCalls);
    const aliceDm = tg!.privateChat(t.alice);
    const group = tg!.group("Team");
    await t.say(aliceDm, t.alice, "my password hint is secret-pineapple");
    await replyTo(aliceDm.id, 1);
    await t.say(aliceDm, t.alice, "/status");
    const dmSession = /session: (\S+)/.exec(await replyTo(aliceDm.id, 2))?.[1]!;
    await t.say(aliceDm, t.alice, "/new");
    await replyTo(aliceDm.id, 3); // the DM now has an archived session too
    await t.say(group, t.bob, "/status");
    const groupStatus = await replyTo(group.id, 1);
    const groupSession = /session: (\S+)/.exec(groupStatus)?.[1];
    await t.say(group, t.bob, "/sessions pineapple");
    const search = await replyTo(group.id, 2);
    await t.say(group, t.bob, "/sessions");
    const list = await replyTo(group.id, 3);
    await t.say(group, t.bob, `/resume ${dmSession}`);
    const resume = await until(() => texts(group.id).length >= 4, 8_000, "resume answer").then((ok) => (ok ? texts(group.id)[3]! : "(no reply)"));
    await t.say(group, t.bob, "/status");
    const statusAfter = await replyTo(group.id, texts(group.id).length + 1).catch(() => texts(group.id).at(-1) ?? "");
    // Alice herself in the group is the group, not her DM.
    await t.say(group, t.alice, "/sessions pineapple");
    const aliceInGroup = await until(() => texts(group.id).some((x, i) => i >= 4 && /mentions|pineapple/.test(x)), 8_000, "alice's search").then(
      () => texts(group.id).at(-1) ?? "",
    );
    const all = texts(group.id).join("\n");
    report("group-reads-dm", {
      groupStatusShowsGroupSession: groupSession !== undefined && groupSession !== dmSession,
      searchFoundDm: search.includes("pineapple") && !search.startsWith("No session"),
      listShowsDm: list.includes(dmSession),
      resumeAnswer: resume.slice(0, 120),
      statusAfterIsGroup: statusAfter.includes(groupSession ?? "?"),
      dmIdInGroupReplies: all.split(dmSession).length - 1,
      aliceSearchInGroup: aliceInGroup.slice(0, 80),
    });
    expect(groupSession).toBeTruthy();
    expect(groupSession).not.toBe(dmSession);
    expect(search).toMatch(/^No session of this chat mentions/);
    expect(list).not.toContain(dmSession);
    expect(resume).toMatch(/not found in this chat/i);
    expect(statusAfter).toContain(groupSession!);
    expect(all).not.toContain("password hint");
  });
});
