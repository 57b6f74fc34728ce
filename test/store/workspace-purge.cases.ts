import { expect, it } from "vitest";
import type { Database } from "../../src/store/db.js";
import { purgeSlackWorkspace, type WorkspacePurgeCounts } from "../../src/store/workspace-purge.js";
import type { TestDb, TestProvider } from "../support/db.js";

const TABLES = [
  "Message",
  "Approval",
  "JobRun",
  "ScheduledJob",
  "ApiMessage",
  "OutboundDelivery",
  "InboundEvent",
  "ConversationLease",
  "ConversationAddress",
  "PairingRequest",
  "AccessGrant",
  "AdapterState",
  "Memory",
  "IdentityLink",
  "User",
  "Group",
  "Binding",
  "Session",
] as const satisfies ReadonlyArray<keyof WorkspacePurgeCounts>;

const at = new Date("2024-05-01T10:00:00.000Z");
const later = new Date("2024-05-02T10:00:00.000Z");
let n = 0;
const uuid = () => `00000000-0000-4000-8000-${String(++n).padStart(12, "0")}`;

/**
 * One Slack workspace's rows in every table the gateway keeps, shaped as the
 * gateway writes them (ids.ts, keys.ts, binding-key.ts, memory-scope.ts): a DM
 * with its user, a channel with a thread group, their transcripts, bindings, an
 * approval, a scheduled job and its run, an inbound event, a delivery and its
 * API record, a lease, an address, a pairing request, an access grant, the
 * thread memory and reflection progress, memories. `shared` is a user of
 * another workspace too (Slack Connect): it also gets a DM here.
 */
async function seedWorkspace(db: Database, team: string, bot: string, shared?: string): Promise<void> {
  const q = db.q;
  const run = (op: string, query: Parameters<Database["exec"]>[1]) => db.exec(op, query);
  const user = uuid();
  const group = uuid();
  const thread = uuid();
  const dm = `slack:${team}:${bot}:dm:D${team}1`;
  const ch = `slack:${team}:${bot}:group:C${team}1`;
  const chat = `${team}/C${team}1`;
  const chatKey = `slack:${bot}:${chat}:`;
  await run("u", q.insertInto("User").values({ id: user, platform: "slack", externalId: `U${team}USER`, displayName: "Ana", createdAt: at }));
  await run("il", q.insertInto("IdentityLink").values({ userId: user, personId: uuid(), createdAt: at }));
  await run("g", q.insertInto("Group").values({ id: group, platform: "slack", externalId: chat, title: "general", createdAt: at }));
  await run(
    "g",
    q.insertInto("Group").values({ id: thread, platform: "slack", externalId: `${chat}:thread:1712345678.000100`, parentId: group, createdAt: at }),
  );
  const sessions: Array<{ id: string; userId: string; groupId: string | null; channel: string }> = [
    { id: uuid(), userId: user, groupId: null, channel: dm },
    { id: uuid(), userId: group, groupId: group, channel: ch },
    ...(shared === undefined ? [] : [{ id: uuid(), userId: shared, groupId: null, channel: `slack:${team}:${bot}:dm:D${team}2` }]),
  ];
  for (const s of sessions) {
    await run("s", q.insertInto("Session").values({ ...s, agentId: bot, kind: "chat", createdAt: at, lastActive: at }));
    const key = s.groupId === null ? `private|${s.userId}|${bot}|chat|${encodeURIComponent(s.channel)}` : `group|${s.groupId}|${bot}|chat`;
    await run(
      "b",
      q.insertInto("Binding").values({
        key,
        scope: s.groupId ? "group" : "private",
        agentId: bot,
        userId: s.userId,
        groupId: s.groupId,
        kind: "chat",
        channel: s.channel,
        sessionId: s.id,
        createdAt: at,
        updatedAt: at,
      }),
    );
    await run("m", q.insertInto("Message").values({ sessionId: s.id, seq: 1, role: "user", content: `hello from ${team}`, createdAt: at }));
    await run("kv", q.insertInto("AdapterState").values({ key: `reflection:${s.id}`, value: "1", updatedAt: at }));
    const scope = s.groupId === null ? `private:${bot}:${s.userId}` : `group:${bot}:${s.groupId}`;
    await run("mem", q.insertInto("Memory").values({ id: uuid(), scope, sessionId: null, content: "likes tea", createdAt: at }));
    await run("mem", q.insertInto("Memory").values({ id: uuid(), scope, sessionId: s.id, content: "said hi", createdAt: at }));
  }
  const groupSession = sessions[1]!.id;
  const address = JSON.stringify({ platform: "slack", botId: bot, chatId: `C${team}1`, extra: { teamId: team } });
  await run(
    "a",
    q.insertInto("Approval").values({
      id: `ap${team}`,
      sessionId: groupSession,
      platform: "slack",
      botId: bot,
      chatId: chat,
      replyTo: address,
      requesterId: `U${team}USER`,
      tool: "shell",
      arguments: "{}",
      owner: "p1",
      createdAt: at,
      expiresAt: later,
    }),
  );
  const job = uuid();
  await run(
    "j",
    q.insertInto("ScheduledJob").values({
      id: job,
      conversation: `group|${group}|${bot}|chat`,
      target: "{}",
      address,
      platform: "slack",
      botId: bot,
      kind: "once",
      spec: later.toISOString(),
      timezone: "UTC",
      action: "text",
      text: "standup",
      status: "active",
      createdBy: "cli",
      createdAt: at,
      updatedAt: at,
    }),
  );
  await run("jr", q.insertInto("JobRun").values({ id: uuid(), jobId: job, dueAt: later, status: "delivered", startedAt: at }));
  const inbound = uuid();
  await run(
    "ie",
    q.insertInto("InboundEvent").values({
      id: inbound,
      platform: "slack",
      botId: bot,
      eventId: `C${team}1:1712345678.000100`,
      status: "done",
      envelope: JSON.stringify({ chatId: chat }),
      occurredAt: at,
      receivedAt: at,
      sessionId: groupSession,
      conversation: chatKey,
    }),
  );
  const delivery = uuid();
  await run(
    "od",
    q.insertInto("OutboundDelivery").values({
      id: delivery,
      inboundId: inbound,
      sessionId: groupSession,
      platform: "slack",
      botId: bot,
      address,
      text: "hi",
      status: "sent",
      createdAt: at,
      expiresAt: later,
    }),
  );
  await run(
    "api",
    q.insertInto("ApiMessage").values({
      id: uuid(),
      principal: "operator",
      idempotencyKey: `k${team}`,
      fingerprint: "f",
      mode: "send",
      platform: "slack",
      botId: bot,
      deliveryId: delivery,
      createdAt: at,
    }),
  );
  await run("l", q.insertInto("ConversationLease").values({ key: chatKey, owner: "p1", expiresAt: later }));
  await run(
    "ca",
    q.insertInto("ConversationAddress").values({
      key: chatKey,
      platform: "slack",
      botId: bot,
      chatId: chat,
      replyChatId: `C${team}1`,
      bindingKey: `group|${group}|${bot}|chat`,
      template: "{}",
      updatedAt: at,
    }),
  );
  await run(
    "pr",
    q
      .insertInto("PairingRequest")
      .values({ code: `P${team}`, platform: "slack", botId: bot, channel: dm, senderId: `U${team}NEW`, status: "pending", createdAt: at, expiresAt: later }),
  );
  await run("ag", q.insertInto("AccessGrant").values({ platform: "slack", botId: bot, senderId: `U${team}USER`, source: "pairing", createdAt: at }));
  await run("kv", q.insertInto("AdapterState").values({ key: `slack:${bot}:thread:C${team}1:1712345678.000100`, value: "1", updatedAt: at }));
}

/** Every row of every table the purge touches, in a stable order. */
async function snapshot(db: Database): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const t of TABLES) {
    const rows = await db.query(`snap-${t}`, db.q.selectFrom(t).selectAll());
    out[t] = rows.map((r) => JSON.stringify(r)).sort();
  }
  return out;
}

/** What another workspace and another platform keep, which no purge may touch. */
async function seedOthers(db: Database): Promise<string> {
  const shared = uuid();
  await db.exec("u", db.q.insertInto("User").values({ id: shared, platform: "slack", externalId: "USHARED", createdAt: at }));
  await db.exec("il", db.q.insertInto("IdentityLink").values({ userId: shared, personId: uuid(), createdAt: at }));
  await seedWorkspace(db, "TKEEP", "UKEEPBOT", shared);
  const tg = uuid();
  await db.exec(
    "s",
    db.q.insertInto("Session").values({ id: tg, agentId: "777", userId: uuid(), channel: "telegram:777:dm:42", kind: "chat", createdAt: at, lastActive: at }),
  );
  await db.exec("m", db.q.insertInto("Message").values({ sessionId: tg, seq: 1, role: "user", content: "telegram", createdAt: at }));
  return shared;
}

function diffCounts(before: Record<string, unknown[]>, after: Record<string, unknown[]>): Record<string, number> {
  return Object.fromEntries(TABLES.map((t) => [t, (after[t]?.length ?? 0) - (before[t]?.length ?? 0)]));
}

/** The purge on a real database of `provider`: one workspace's rows all gone, everything else byte for byte as it was. */
export function workspacePurgeCases(provider: TestProvider, open: () => Promise<TestDb>): void {
  it(`purges one workspace's rows in every table and leaves another's and other platforms' intact (${provider})`, async () => {
    const t = await open();
    try {
      const shared = await seedOthers(t.db);
      const kept = await snapshot(t.db);
      await seedWorkspace(t.db, "TGONE", "UGONEBOT", shared);
      const seeded = diffCounts(kept, await snapshot(t.db));
      for (const table of TABLES) expect(seeded[table], table).toBeGreaterThan(0);
      // The shared user's own rows are not the workspace's: they stay.
      const r = await purgeSlackWorkspace(t.db, { teamId: "TGONE" });
      expect(r.teams).toEqual(["TGONE"]);
      expect(r.deleted).toEqual(seeded);
      expect(await snapshot(t.db)).toEqual(kept);
      // A second purge finds nothing.
      const again = await purgeSlackWorkspace(t.db, { teamId: "TGONE" });
      expect(Object.values(again.deleted).every((c) => c === 0)).toBe(true);
    } finally {
      await t.close();
    }
  });

  it(`purges an org-wide install by its bot user: every workspace it talked in, no other (${provider})`, async () => {
    const t = await open();
    try {
      const shared = await seedOthers(t.db);
      const kept = await snapshot(t.db);
      await seedWorkspace(t.db, "TORGA", "UORGBOT", shared);
      await seedWorkspace(t.db, "TORGB", "UORGBOT");
      const r = await purgeSlackWorkspace(t.db, { teamId: "", botUserId: "UORGBOT" });
      expect(r.teams).toEqual(["TORGA", "TORGB"]);
      expect(await snapshot(t.db)).toEqual(kept);
    } finally {
      await t.close();
    }
  });

  it(`refuses a team id that is not a Slack id, and an org-wide purge without its bot user (${provider})`, async () => {
    const t = await open();
    try {
      await expect(purgeSlackWorkspace(t.db, { teamId: "T%" })).rejects.toThrow(/not a Slack id/);
      await expect(purgeSlackWorkspace(t.db, { teamId: "" })).rejects.toThrow(/bot user id/);
    } finally {
      await t.close();
    }
  });
}
