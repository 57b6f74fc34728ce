/**
 * Red-team probes: who reaches the agent and who decides approvals on
 * Telegram, through the real grammY adapter against the loopback fake.
 * One app; each test sets the policy it is about (the gateway reads its
 * config object live, as test/conformance/group-access.ts does).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TelegramAdapter } from "../../../adapters/telegram/index.js";
import type { Config } from "../../../src/config.js";
import type { App } from "../../../src/gateway/app.js";
import { Pairing } from "../../../src/gateway/inbound/pairing.js";
import { AccessStore } from "../../../src/store/access.js";
import { FakeTelegram, type TgChat } from "../../fakes/telegram.js";
import type { FakeOpenAi } from "../../fakes/openai.js";
import { eventually, startApp } from "../../support/app.js";
import { clockAgent } from "../../support/clock-agent.js";

const CLOCK = "use the clock";
let fake: FakeTelegram;
let app: App;
let model: FakeOpenAi;

beforeAll(async () => {
  fake = new FakeTelegram();
  await fake.start();
  const clock = await clockAgent(CLOCK, "probe");
  model = clock.model;
  const adapter = new TelegramAdapter({ token: fake.token, apiRoot: fake.apiRoot, mode: "polling", pollingTimeoutSec: 1 });
  const r = await startApp(
    "sqlite",
    [adapter],
    { DM_POLICY: "pairing", GROUP_REQUIRE_MENTION: "true", REFLECT_EVERY_TURNS: "0" },
    { agentFactory: clock.agentFactory as never, mcpConfig: { servers: [], builtinTools: { current_time: { policy: "ask" } } } },
  );
  app = r.app;
});

afterAll(async () => {
  await app?.stop();
  await fake?.close();
  await model?.close();
});

type Policy = Partial<Pick<Config, "DM_POLICY" | "ALLOW_FROM" | "GROUP_POLICY" | "ALLOW_GROUPS" | "ADMIN_USERS" | "GROUP_UNADMITTED">>;
async function withPolicy(patch: Policy, fn: () => Promise<void>): Promise<void> {
  const config = app.config as Record<string, unknown>;
  const saved = Object.fromEntries(Object.keys(patch).map((k) => [k, config[k]]));
  Object.assign(config, patch);
  try {
    await fn();
  } finally {
    Object.assign(config, saved);
  }
}

const texts = (chat: TgChat) => fake.sent({ chatId: chat.id }).map((s) => s.text);
const waitText = (chat: TgChat, re: RegExp, what: string) =>
  eventually(
    () => texts(chat),
    (t) => t.some((x) => re.test(x)),
    15_000,
    what,
  );
const refusedSoFar = async (): Promise<number> => ((await app.metrics.groupsUnadmitted.get()).values ?? []).reduce((n, v) => n + v.value, 0);

describe("DM_POLICY=allowlist", () => {
  it("admits only ALLOW_FROM: a sender paired while the policy was `pairing` is refused, in a DM and on an approval card", async () => {
    const listed = fake.user("Lister");
    const paired = fake.user("Pam");
    const dm = fake.privateChat(paired);
    // Under pairing: Pam gets a code and the operator approves it (switchboard pairing approve <code>).
    fake.userMessage({ chat: dm, from: paired, text: "hello" });
    const shown = await waitText(dm, /Your pairing code is/, "the pairing code");
    const code = /pairing code is (\S+) /.exec(shown.find((t) => /pairing code is/.test(t))!)![1]!;
    expect(typeof (await new Pairing(new AccessStore(app.db)).approve(code))).toBe("object");
    fake.userMessage({ chat: dm, from: paired, text: "paired now" });
    await waitText(dm, /echo: .*paired now/, "Pam answered while paired");

    // The operator tightens the bot to an allowlist that does not name Pam.
    await withPolicy({ DM_POLICY: "allowlist", ALLOW_FROM: [`telegram:${listed.id}`], GROUP_POLICY: "open" }, async () => {
      const before = texts(dm).length;
      fake.userMessage({ chat: dm, from: paired, text: "still there?" });
      const after = await eventually(
        () => texts(dm).slice(before),
        (t) => t.length >= 1,
        15_000,
        "an answer to Pam under the allowlist",
      );
      // README "Access and groups": `allowlist` admits only ALLOW_FROM.
      expect(after[0]).toMatch(/only talks to people on its allowlist/);
      expect(after.join("\n")).not.toMatch(/echo: .*still there\?/);

      // Nor may she decide a tool call (the bar is "passes the DM policy").
      const group = fake.supergroup("allowlist-open-group");
      const asker = fake.user("Asker");
      fake.userMessage({ chat: group, from: asker, text: `@${fake.botUser.username} ${CLOCK}` });
      const card = await eventually(
        () => fake.sent({ chatId: group.id }).find((s) => /The agent wants to use the tool/.test(s.text)),
        Boolean,
        15_000,
        "the card",
      );
      const msg = fake.message(group.id, card!.messageId)!;
      const data = (msg.reply_markup as { inline_keyboard: Array<Array<{ callback_data: string }>> }).inline_keyboard
        .flat()
        .find((b) => b.callback_data.startsWith("approval:approve:"))!.callback_data;
      // APPROVERS=anyone would let anyone in the chat decide; still only someone who passes the DM policy.
      const q = fake.callbackQuery({ from: paired, message: msg, data });
      const answer = await eventually(() => fake.callbackAnswer(q.callback_query!.id), Boolean, 15_000, "the answer to Pam's press");
      // Pam is not the requester, so under APPROVERS=requester she is refused either way; what matters is which refusal.
      expect(String(answer!.text)).toMatch(/Only someone this bot already talks to/);
      // Clean up: the asker's call is cancelled by /stop.
      fake.userMessage({ chat: group, from: asker, text: "/stop" });
      await waitText(group, /Cancelled|stopped|Stopped/, "the stop");
    });
  });
});

describe("a Telegram group upgraded to a supergroup", () => {
  it("keeps its admission (/allowgroup) with its session: strangers there are still answered", async () => {
    const admin = fake.user("Adm");
    await withPolicy({ DM_POLICY: "pairing", GROUP_POLICY: "pairing", ADMIN_USERS: [`telegram:${admin.id}`] }, async () => {
      const group = fake.group("basic-admitted");
      const stranger = fake.user("Stan");
      fake.command({ chat: group, from: admin, command: "allowgroup" });
      await waitText(group, /This group is admitted/, "the admission");
      fake.userMessage({ chat: group, from: stranger, text: `@${fake.botUser.username} before upgrade` });
      await waitText(group, /echo: .*before upgrade/, "answered before the upgrade");

      const supergroup = fake.migrateToSupergroup(group, admin);
      const before = await refusedSoFar();
      fake.userMessage({ chat: supergroup, from: stranger, text: `@${fake.botUser.username} after upgrade` });
      const seen = await eventually(
        async () => ({ refused: await refusedSoFar(), shown: texts(supergroup) }),
        (s) => s.refused > before || s.shown.some((t) => /after upgrade/.test(t)),
        15_000,
        "an answer or a refusal in the supergroup",
      );
      expect(seen.refused, "the upgraded group was refused as not admitted").toBe(before);
      expect(seen.shown.some((t) => /echo: .*after upgrade/.test(t))).toBe(true);
    });
  });
});

describe("approval commands addressed to another bot", () => {
  it("/deny@otherbot <id> is not ours: the approval stays pending and nothing is said", async () => {
    await withPolicy({ DM_POLICY: "open", GROUP_POLICY: "open" }, async () => {
      const group = fake.supergroup("two-bots");
      const alice = fake.user("Alice");
      fake.userMessage({ chat: group, from: alice, text: `@${fake.botUser.username} ${CLOCK}` });
      const card = await eventually(
        () => fake.sent({ chatId: group.id }).find((s) => /The agent wants to use the tool/.test(s.text)),
        Boolean,
        15_000,
        "the card",
      );
      // The card is on the platform a moment before its message id is on the row (ApprovalStore.setCard).
      const [row] = await eventually(
        () =>
          app.db.query(
            "probe-approval",
            app.db.q
              .selectFrom("Approval")
              .select(["id", "status"])
              .where("cardMessageId", "=", String(card!.messageId))
              .where("chatId", "=", String(group.id)),
          ),
        (rows) => rows.length === 1,
        15_000,
        "the card's approval row",
      );
      const id = row!.id;
      const before = texts(group).length;
      fake.userMessage({ chat: group, from: alice, text: `/deny@some_other_bot ${id}` });
      // Barrier: a later command in the same chat is handled after it (one chat, one order).
      fake.userMessage({ chat: group, from: alice, text: "/whoami" });
      await eventually(
        () => texts(group).slice(before),
        (t) => t.length >= 1,
        15_000,
        "the /whoami answer",
      );
      const [now] = await app.db.query("probe-approval-now", app.db.q.selectFrom("Approval").select("status").where("id", "=", id));
      expect(now!.status).toBe("pending");
      const said = texts(group).slice(before);
      expect(said.filter((t) => /Denied|There is no approval|Already/.test(t))).toEqual([]);
      // Clean up: decide it for real.
      fake.userMessage({ chat: group, from: alice, text: `/approve ${id}` });
      await waitText(group, /the tool said: UTC:/, "the answer after approval");
    });
  });
});
