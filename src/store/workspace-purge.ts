import { type ExpressionBuilder, type Expression, type SqlBool, sql } from "kysely";
import type { Database } from "./db.js";
import type { Sql } from "./sql.js";

/**
 * Which Slack workspace to purge. A workspace install is its team id; an
 * Enterprise Grid org-wide install (team "") is its bot user, which serves every
 * workspace of the org: the teams purged are those its conversations were in.
 */
export interface SlackWorkspaceRef {
  teamId: string;
  /** The installation's bot user (U…): required for an org-wide install, whose teamId is "". */
  botUserId?: string;
}

/** Rows deleted, per table (every table the purge touches, zeros included). */
export type WorkspacePurgeCounts = Record<(typeof TABLES)[number], number>;

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
] as const;

/** Slack ids are upper-case letters and digits: nothing in them means anything to LIKE. */
const SLACK_ID = /^[A-Z0-9]{2,32}$/;

function slackId(what: string, v: string): string {
  if (!SLACK_ID.test(v)) throw new Error(`${what} ${JSON.stringify(v)} is not a Slack id (upper-case letters and digits, such as T0123ABCD)`);
  return v;
}

/** `column LIKE p1 OR column LIKE p2 ...`; false for no patterns. */
function likeAny<D, T extends keyof D>(eb: ExpressionBuilder<D, T>, column: string, patterns: readonly string[]): Expression<SqlBool> {
  if (patterns.length === 0) return sql<SqlBool>`1 = 0`;
  return eb.or(patterns.map((p) => sql<SqlBool>`${sql.ref(column)} like ${p}`));
}

/** The slices of the durable keys that name a team, for LIKE. */
const patterns = (teams: readonly string[]) => ({
  /** Session, Binding and PairingRequest channels: slack:<team>:<bot>:... */
  channel: teams.map((t) => `slack:${t}:%`),
  /** Group external ids and ConversationAddress chat ids: <team>/<channel>[...] */
  chat: teams.map((t) => `${t}/%`),
  /** Inbound conversations and lease keys (chatKey): slack:<bot>:<team>/<channel>:<thread> */
  chatKey: teams.map((t) => `slack:%:${t}/%`),
});

/** The teams an org-wide install's bot user talked in, read from its conversations' channels and addresses. */
async function teamsOfBot(s: Sql, db: Database, botUserId: string): Promise<string[]> {
  const q = db.q;
  const channels = await s.all(q.selectFrom("Session").select("channel").distinct().where("channel", "like", `slack:%:${botUserId}:%`));
  const chats = await s.all(q.selectFrom("ConversationAddress").select("chatId").distinct().where("platform", "=", "slack").where("botId", "=", botUserId));
  const teams = new Set<string>();
  for (const { channel } of channels) teams.add(channel.split(":")[1] ?? "");
  for (const { chatId } of chats) teams.add(chatId.slice(0, chatId.indexOf("/")));
  return [...teams].filter((t) => SLACK_ID.test(t)).sort();
}

/** The bot users that served these teams (a channel's third segment), beside the installation's own. */
async function botsOfTeams(s: Sql, db: Database, teams: readonly string[], botUserId: string | undefined): Promise<string[]> {
  const rows = await s.all(
    db.q
      .selectFrom("Session")
      .select("channel")
      .distinct()
      .where((eb) => likeAny(eb, "channel", patterns(teams).channel)),
  );
  const bots = new Set<string>(botUserId === undefined ? [] : [botUserId]);
  for (const { channel } of rows) bots.add(channel.split(":")[2] ?? "");
  return [...bots].filter((b) => SLACK_ID.test(b)).sort();
}

/**
 * Deletes what the gateway keeps of one Slack workspace, in one transaction:
 * its sessions and their transcripts, bindings, approvals, memories (the
 * sessions' own and their group and private scopes with this workspace's
 * bot), scheduled jobs and their runs, inbound events, deliveries, API
 * message records, conversation addresses and leases, pairing requests and
 * access grants of its bot, its thread memory and reflection progress, its
 * groups' identities, and the Slack users whose every session was in it (with
 * their identity links). Nothing of another workspace is touched: every row is
 * reached through the team id its durable key carries. The installation row is
 * not: deleting it is the caller's (SlackInstallationStore.delete).
 */
export async function purgeSlackWorkspace(db: Database, ref: SlackWorkspaceRef): Promise<{ teams: string[]; deleted: WorkspacePurgeCounts }> {
  if (ref.teamId === "" && ref.botUserId === undefined) throw new Error("purging an org-wide install needs its bot user id");
  const teamId = ref.teamId === "" ? "" : slackId("team id", ref.teamId);
  const botUserId = ref.botUserId === undefined ? undefined : slackId("bot user id", ref.botUserId);
  return db.sqlTransaction("slack-workspace-purge", async (s) => {
    const teams = teamId !== "" ? [teamId] : await teamsOfBot(s, db, botUserId as string);
    const bots = await botsOfTeams(s, db, teams, botUserId);
    const deleted = await deleteAll(s, db, teams, bots);
    return { teams, deleted };
  });
}

type Patterns = ReturnType<typeof patterns>;

/** The workspace's rows of the tables others hang off, as subqueries (each call a fresh one). */
function selections(db: Database, p: Patterns) {
  const q = db.q;
  const sessions = () =>
    q
      .selectFrom("Session")
      .select("Session.id")
      .where((eb) => likeAny(eb, "Session.channel", p.channel));
  const bindingKeys = () =>
    q
      .selectFrom("Binding")
      .select("Binding.key")
      .where((eb) => eb.or([likeAny(eb, "Binding.channel", p.channel), eb("Binding.sessionId", "in", sessions())]));
  const jobs = () =>
    q
      .selectFrom("ScheduledJob")
      .select("ScheduledJob.id")
      .where((eb) => eb.or([eb("ScheduledJob.sessionId", "in", sessions()), eb("ScheduledJob.conversation", "in", bindingKeys())]));
  const inbound = () =>
    q
      .selectFrom("InboundEvent")
      .select("InboundEvent.id")
      .where("InboundEvent.platform", "=", "slack")
      .where((eb) => eb.or([likeAny(eb, "InboundEvent.conversation", p.chatKey), eb("InboundEvent.sessionId", "in", sessions())]));
  const deliveries = () =>
    q
      .selectFrom("OutboundDelivery")
      .select("OutboundDelivery.id")
      .where((eb) => eb.or([eb("OutboundDelivery.sessionId", "in", sessions()), eb("OutboundDelivery.inboundId", "in", inbound())]));
  return { sessions, bindingKeys, jobs, inbound, deliveries };
}

async function deleteAll(s: Sql, db: Database, teams: readonly string[], bots: readonly string[]): Promise<WorkspacePurgeCounts> {
  const p = patterns(teams);
  const n = Object.fromEntries(TABLES.map((t) => [t, 0])) as WorkspacePurgeCounts;
  await deleteRecords(s, db, p, bots, n);
  await deleteConversations(s, db, p, bots, n);
  return n;
}

/** Transcripts, approvals, jobs, API records, deliveries and inbound events: rows reached through the workspace's sessions and chats. */
async function deleteRecords(s: Sql, db: Database, p: Patterns, bots: readonly string[], n: WorkspacePurgeCounts): Promise<void> {
  const q = db.q;
  const { sessions, jobs, inbound, deliveries } = selections(db, p);
  n.Message = await s.run(q.deleteFrom("Message").where("sessionId", "in", sessions()));
  n.Approval = await s.run(q.deleteFrom("Approval").where("sessionId", "in", sessions()));
  n.JobRun = await s.run(q.deleteFrom("JobRun").where("jobId", "in", jobs()));
  n.ScheduledJob = await s.run(q.deleteFrom("ScheduledJob").where("id", "in", jobs()));
  n.ApiMessage = await s.run(
    q
      .deleteFrom("ApiMessage")
      .where("platform", "=", "slack")
      .where((eb) =>
        eb.or([
          eb("deliveryId", "in", deliveries()),
          eb.and([eb("eventId", "in", inbound().clearSelect().select("InboundEvent.eventId")), bots.length ? eb("botId", "in", bots) : sql<SqlBool>`1 = 0`]),
        ]),
      ),
  );
  n.OutboundDelivery = await s.run(q.deleteFrom("OutboundDelivery").where("id", "in", deliveries()));
  n.InboundEvent = await s.run(q.deleteFrom("InboundEvent").where("id", "in", inbound()));
}

/** Leases, addresses, pairing and access, adapter state, memories, identities, then the bindings and sessions themselves. */
async function deleteConversations(s: Sql, db: Database, p: Patterns, bots: readonly string[], n: WorkspacePurgeCounts): Promise<void> {
  const q = db.q;
  const { sessions, bindingKeys } = selections(db, p);
  n.ConversationLease = await s.run(q.deleteFrom("ConversationLease").where((eb) => likeAny(eb, "key", p.chatKey)));
  n.ConversationAddress = await s.run(
    q
      .deleteFrom("ConversationAddress")
      .where("platform", "=", "slack")
      .where((eb) => likeAny(eb, "chatId", p.chat)),
  );
  n.PairingRequest = await s.run(
    q
      .deleteFrom("PairingRequest")
      .where("platform", "=", "slack")
      .where((eb) => likeAny(eb, "channel", p.channel)),
  );
  if (bots.length > 0) n.AccessGrant = await s.run(q.deleteFrom("AccessGrant").where("platform", "=", "slack").where("botId", "in", bots));
  n.AdapterState = await s.run(
    q.deleteFrom("AdapterState").where((eb) =>
      eb.or([
        likeAny(
          eb,
          "key",
          bots.map((b) => `slack:${b}:%`),
        ),
        eb(
          "key",
          "in",
          sessions()
            .clearSelect()
            .select(sql<string>`${sql.lit("reflection:")} || ${sql.ref("Session.id")}`.as("k")),
        ),
      ]),
    ),
  );
  n.Memory = await s.run(q.deleteFrom("Memory").where((eb) => eb.or([eb("sessionId", "in", sessions()), eb("scope", "in", memoryScopes(db, p.channel))])));
  const users = () => workspaceOnlyUsers(db, p.channel);
  n.IdentityLink = await s.run(q.deleteFrom("IdentityLink").where("userId", "in", users()));
  n.User = await s.run(q.deleteFrom("User").where("platform", "=", "slack").where("id", "in", users()));
  n.Group = await s.run(
    q
      .deleteFrom("Group")
      .where("platform", "=", "slack")
      .where((eb) => likeAny(eb, "externalId", p.chat)),
  );
  n.Binding = await s.run(q.deleteFrom("Binding").where("key", "in", bindingKeys()));
  n.Session = await s.run(q.deleteFrom("Session").where("id", "in", sessions()));
}

/** The memory scopes of the workspace's sessions (src/session/memory-scope.ts): group:<agent>:<group>, private:<agent>:<user>. */
function memoryScopes(db: Database, channelPatterns: readonly string[]) {
  const scope = sql<string>`case when ${sql.ref("groupId")} is null
    then ${sql.lit("private:")} || ${sql.ref("agentId")} || ${sql.lit(":")} || ${sql.ref("userId")}
    else ${sql.lit("group:")} || ${sql.ref("agentId")} || ${sql.lit(":")} || ${sql.ref("groupId")} end`;
  return db.q
    .selectFrom("Session")
    .select(scope.as("scope"))
    .where((eb) => likeAny(eb, "channel", channelPatterns));
}

/** The users whose sessions were all in the workspace (a group session's user is its group, never in User). */
function workspaceOnlyUsers(db: Database, channelPatterns: readonly string[]) {
  const q = db.q;
  return q
    .selectFrom("Session")
    .select("Session.userId")
    .where((eb) => likeAny(eb, "Session.channel", channelPatterns))
    .where("Session.groupId", "is", null)
    .where((eb) =>
      eb(
        "Session.userId",
        "not in",
        q
          .selectFrom("Session as other")
          .select("other.userId")
          .where((o) => o.not(likeAny(o, "other.channel", channelPatterns))),
      ),
    );
}
