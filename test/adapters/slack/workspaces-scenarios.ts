/**
 * Many Slack workspaces on one gateway, end to end: the real gateway (startApp)
 * with the Slack adapter installing by OAuth, installs through
 * /slack/install -> /slack/oauth_redirect on the gateway's own server (the
 * real InstallProvider against the fake's oauth.v2.access), and signed events
 * posted by the fake as each installation would receive them. Shared by the
 * SQLite (workspaces.test.ts) and PostgreSQL (workspaces.pg.test.ts) files.
 */
import { expect } from "vitest";
import { SlackAdapter } from "../../../adapters/slack/index.js";
import { OAUTH_REDIRECT_PATH } from "../../../adapters/slack/install-routes.js";
import type { SlackOAuthOptions } from "../../../adapters/slack/installed.js";
import type { App } from "../../../src/gateway/app.js";
import { FakeSlack, type SlackInstallGrant } from "../../fakes/index.js";
import type { TestProvider } from "../../support/db.js";
import { eventually, startApp } from "../../support/app.js";
import { clockAgent } from "../../support/clock-agent.js";

export interface Gateway {
  sl: FakeSlack;
  app: App;
  url: string;
  /** Installs the app through the gateway's install link, as a browser would; answers the callback's page. */
  install(grant: SlackInstallGrant): Promise<{ status: number; page: string }>;
  /** Posts a signed event to /slack/events; answers the HTTP status. */
  post(body: object): Promise<number>;
  /** The texts the fake shows in a channel (or DM) of the app's messages. */
  texts(channel: string): string[];
  sessionsOf(team: string): Promise<Array<{ id: string; channel: string }>>;
  transcript(sessionId: string): Promise<string[]>;
  stop(): Promise<void>;
}

export async function gateway(
  provider: TestProvider,
  env: Record<string, string> = {},
  oauth: Partial<SlackOAuthOptions> = {},
  mode: "http" | "socket" = "http",
  appOptions: Parameters<typeof startApp>[3] = {},
): Promise<Gateway> {
  const sl = new FakeSlack();
  await sl.start();
  // Slack sends the installer back to the app's Redirect URL; the code is bound to it, so any fixed URL serves the flow.
  const adapter = new SlackAdapter({
    ...(mode === "http" ? { signingSecret: sl.signingSecret } : { appToken: sl.appToken }),
    apiUrl: sl.apiUrl,
    oauth: {
      clientId: sl.oauth.clientId,
      clientSecret: sl.oauth.clientSecret,
      stateSecret: "a-state-secret-of-at-least-thirty-two-characters",
      scopes: [...FakeSlack.MANIFEST_SCOPES],
      redirectUri: `https://gateway.example${OAUTH_REDIRECT_PATH}`,
      ...oauth,
    },
  });
  const { app, url } = await startApp(provider, [adapter], env, appOptions);
  const db = app.db;
  return {
    sl,
    app,
    url,
    async install(grant) {
      const res = await fetch(`${url}/slack/install`, { redirect: "manual" });
      expect(res.status).toBe(302);
      const state = new URL(res.headers.get("location")!).searchParams.get("state")!;
      const cookie = res.headers.get("set-cookie")!.split(";")[0]!;
      const code = sl.oauth.code(grant, `https://gateway.example${OAUTH_REDIRECT_PATH}`);
      const done = await fetch(`${url}${OAUTH_REDIRECT_PATH}?${new URLSearchParams({ code, state })}`, { headers: { cookie } });
      return { status: done.status, page: await done.text() };
    },
    post: async (body) => (await sl.postEvent(`${url}/slack/events`, body)).status,
    texts: (channel) => sl.sent({ channel }).map((m) => m.text),
    sessionsOf: (team) =>
      db.query("test-sessions", db.q.selectFrom("Session").select(["id", "channel"]).where("channel", "like", `slack:${team}:%`).orderBy("createdAt")),
    async transcript(sessionId) {
      const rows = await db.query("test-transcript", db.q.selectFrom("Message").select("content").where("sessionId", "=", sessionId).orderBy("seq"));
      return rows.map((r) => r.content);
    },
    async stop() {
      await app.stop();
      await sl.close();
    },
  };
}

/** Waits until `channel` shows `n` messages of the app's. */
export const replies = (g: Gateway, channel: string, n: number, what = `${n} replies in ${channel}`): Promise<string[]> =>
  eventually(
    () => g.texts(channel),
    (t) => t.length >= n,
    15_000,
    what,
  );

/** Two workspaces installed by OAuth; a DM and a channel with the same ids in each: answered with each team's token, kept apart. */
export async function twoWorkspaces(provider: TestProvider): Promise<void> {
  const g = await gateway(provider);
  try {
    const one = await g.install({ teamId: "T0ONE", teamName: "One" });
    const two = await g.install({ teamId: "T0TWO", teamName: "Two" });
    expect([one.status, two.status]).toEqual([200, 200]);
    expect(one.page).toContain("One");
    const tokenOf = (team: string) => [...g.sl.oauth.tokens.values()].find((t) => t.grant.teamId === team)!.token;

    const a = g.sl.eventsFor({ teamId: "T0ONE" });
    const b = g.sl.eventsFor({ teamId: "T0TWO" });
    // The same DM channel id and the same channel id in both workspaces.
    expect(await g.post(a.message({ channel: "D0SAME01", user: "U0ANN", text: "hello from one" }))).toBe(200);
    await replies(g, "D0SAME01", 1);
    expect(await g.post(b.message({ channel: "D0SAME01", user: "U0BOB", text: "hello from two" }))).toBe(200);
    expect(await replies(g, "D0SAME01", 2)).toEqual(["echo: hello from one", "echo: hello from two"]);
    expect(await g.post(a.appMention({ channel: "C0SAME01", user: "U0ANN", text: "channel one" }))).toBe(200);
    await replies(g, "C0SAME01", 1);
    expect(await g.post(b.appMention({ channel: "C0SAME01", user: "U0BOB", text: "channel two" }))).toBe(200);
    await replies(g, "C0SAME01", 2);

    // Every chat.postMessage used the token of the workspace it answered.
    expect(g.sl.postTokens("D0SAME01")).toEqual([tokenOf("T0ONE"), tokenOf("T0TWO")]);
    expect(g.sl.postTokens("C0SAME01")).toEqual([tokenOf("T0ONE"), tokenOf("T0TWO")]);
    expect(g.sl.postTokens().every((t) => t === tokenOf("T0ONE") || t === tokenOf("T0TWO"))).toBe(true);

    // Two workspaces, two sessions per shared id, each with its own transcript.
    const s1 = await g.sessionsOf("T0ONE");
    const s2 = await g.sessionsOf("T0TWO");
    expect(s1).toHaveLength(2);
    expect(s2).toHaveLength(2);
    expect(new Set([...s1, ...s2].map((s) => s.id)).size).toBe(4);
    const dm1 = s1.find((s) => s.channel.includes(":dm:D0SAME01"))!;
    const dm2 = s2.find((s) => s.channel.includes(":dm:D0SAME01"))!;
    expect(await g.transcript(dm1.id)).toEqual(["hello from one", "echo: hello from one"]);
    expect(await g.transcript(dm2.id)).toEqual(["hello from two", "echo: hello from two"]);
    // Each workspace's messages counted under its own label.
    expect(await metric(g, "switchboard_workspace_messages_total", 'workspace="T0ONE"')).toBe(2);
    expect(await metric(g, "switchboard_workspace_messages_total", 'workspace="T0TWO"')).toBe(2);
  } finally {
    await g.stop();
  }
}

/** The delivery rows of a channel's replies (status and why it failed). */
async function deliveriesTo(g: Gateway, channel: string): Promise<Array<{ status: string; lastError: string | null }>> {
  const rows = await g.app.db.query(
    "test-deliveries",
    g.app.db.q.selectFrom("OutboundDelivery").select(["status", "lastError", "address"]).where("platform", "=", "slack").orderBy("createdAt"),
  );
  return rows.filter((r) => (JSON.parse(r.address) as { chatId: string }).chatId === channel).map(({ status, lastError }) => ({ status, lastError }));
}

const installations = async (g: Gateway): Promise<string[]> =>
  (await g.app.db.query("test-installations", g.app.db.q.selectFrom("SlackInstallation").select("teamId").orderBy("teamId"))).map((r) => r.teamId);

/**
 * Uninstall and revocation, in both orders and each twice: the team's row
 * and tokens are gone, a reply queued to it (held by a 429) is settled as
 * failed "uninstalled", the other team keeps working, and a reinstall works.
 */
export async function uninstallAndReinstall(provider: TestProvider, order: "revoked-first" | "uninstalled-first"): Promise<void> {
  const g = await gateway(provider);
  try {
    await g.install({ teamId: "T0GONE" });
    await g.install({ teamId: "T0STAY" });
    const gone = g.sl.eventsFor({ teamId: "T0GONE" });
    const stay = g.sl.eventsFor({ teamId: "T0STAY" });

    // A reply to the leaving team waits out a 429 (retry after 2 s) while the uninstall arrives.
    g.sl.rateLimitNext("chat.postMessage", 2);
    expect(await g.post(gone.message({ channel: "D0GONE01", user: "U0GONE", text: "answer me later" }))).toBe(200);
    await eventually(
      () => g.sl.callsTo("chat.postMessage").filter((c) => c.params.channel === "D0GONE01").length,
      (n) => n === 1,
      10_000,
      "the rate-limited first attempt",
    );
    const events =
      order === "revoked-first"
        ? [gone.tokensRevoked({ bot: ["U0GONEBOT"] }), gone.appUninstalled()]
        : [gone.appUninstalled(), gone.tokensRevoked({ bot: ["U0GONEBOT"] })];
    for (const e of [...events, ...events]) expect(await g.post(e)).toBe(200);
    g.sl.revoke("T0GONE");
    expect(await installations(g)).toEqual(["T0STAY"]);

    const settled = await eventually(
      () => deliveriesTo(g, "D0GONE01"),
      (d) => d.length === 1 && d[0]!.status !== "pending" && d[0]!.status !== "sending",
      15_000,
      "the queued reply to settle",
    );
    expect(settled[0]!.status).toBe("failed");
    expect(settled[0]!.lastError).toMatch(/^uninstalled: /);
    expect(await metric(g, "switchboard_workspace_failures_total", 'workspace="T0GONE"')).toBe(1);
    expect(g.texts("D0GONE01")).toEqual([]);

    // An event for the removed team is acknowledged, counted and not answered.
    const unknownBefore = await metric(g, "switchboard_inbound_total", 'outcome="unknown_workspace"');
    expect(await g.post(gone.message({ channel: "D0GONE01", user: "U0GONE", text: "anyone there?" }))).toBe(200);
    expect(await metric(g, "switchboard_inbound_total", 'outcome="unknown_workspace"')).toBe(unknownBefore + 1);

    // The other team is untouched.
    expect(await g.post(stay.message({ channel: "D0STAY01", user: "U0STAY", text: "still here" }))).toBe(200);
    expect(await replies(g, "D0STAY01", 1)).toEqual(["echo: still here"]);

    // Reinstalled, the team is answered again, with its new token.
    expect((await g.install({ teamId: "T0GONE" })).status).toBe(200);
    expect(await g.post(gone.message({ channel: "D0GONE02", user: "U0GONE", text: "back again" }))).toBe(200);
    expect(await replies(g, "D0GONE02", 1)).toEqual(["echo: back again"]);
    const fresh = [...g.sl.oauth.tokens.values()].filter((t) => t.grant.teamId === "T0GONE").at(-1)!.token;
    expect(g.sl.postTokens("D0GONE02")).toEqual([fresh]);
    expect(g.texts("D0GONE01")).toEqual([]);
  } finally {
    await g.stop();
  }
}

/** An org-wide (Enterprise Grid) install answers in two workspaces of the org, with the org's token, in a session per workspace. */
export async function orgWide(provider: TestProvider): Promise<void> {
  const g = await gateway(provider);
  try {
    expect((await g.install({ enterpriseId: "E0ORG", isEnterpriseInstall: true })).status).toBe(200);
    const orgToken = [...g.sl.oauth.tokens.values()].find((t) => t.grant.enterpriseId === "E0ORG")!.token;
    for (const team of ["T0WS1", "T0WS2"]) {
      const ev = g.sl.eventsFor({ teamId: team, enterpriseId: "E0ORG", orgWide: true });
      expect(await g.post(ev.message({ channel: "D0ORGDM1", user: `U0${team}`, text: `hi from ${team}` }))).toBe(200);
    }
    // Two conversations (one per workspace) are answered concurrently: in either order.
    expect((await replies(g, "D0ORGDM1", 2)).sort()).toEqual(["echo: hi from T0WS1", "echo: hi from T0WS2"]);
    expect(g.sl.postTokens("D0ORGDM1")).toEqual([orgToken, orgToken]);
    expect(await g.sessionsOf("T0WS1")).toHaveLength(1);
    expect(await g.sessionsOf("T0WS2")).toHaveLength(1);
  } finally {
    await g.stop();
  }
}

/** What /metrics counts for a label set, or 0. */
export async function metric(g: Gateway, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${g.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && labels.split(",").every((p) => l.includes(p)));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

/**
 * The installing user administers their workspace (DM_POLICY=pairing lets
 * them in), nobody else's: the same user id in another workspace, and a
 * stranger in theirs, are asked to pair.
 */
export async function installerIsAdmin(provider: TestProvider): Promise<void> {
  const g = await gateway(provider, { DM_POLICY: "pairing" });
  try {
    await g.install({ teamId: "T0ADM1", installerUserId: "U0BOSS" });
    await g.install({ teamId: "T0ADM2", installerUserId: "U0OTHER" });
    const one = g.sl.eventsFor({ teamId: "T0ADM1" });
    const two = g.sl.eventsFor({ teamId: "T0ADM2" });
    expect(await g.post(one.message({ channel: "D0ADM101", user: "U0BOSS", text: "let me in" }))).toBe(200);
    expect(await replies(g, "D0ADM101", 1)).toEqual(["echo: let me in"]);
    expect(await g.post(one.message({ channel: "D0ADM102", user: "U0STRANGER", text: "me too" }))).toBe(200);
    expect((await replies(g, "D0ADM102", 1))[0]).not.toContain("echo:");
    expect(await g.post(two.message({ channel: "D0ADM201", user: "U0BOSS", text: "and here?" }))).toBe(200);
    expect((await replies(g, "D0ADM201", 1))[0]).not.toContain("echo:");
  } finally {
    await g.stop();
  }
}

/**
 * SLACK_BOT_TOKEN beside installs by OAuth: its workspace is one more
 * installation (source env), answered with that token, beside an installed one.
 */
export async function singleTokenBesideOAuth(provider: TestProvider): Promise<void> {
  const sl = new FakeSlack();
  await sl.start();
  const adapter = new SlackAdapter({
    botToken: sl.botToken,
    signingSecret: sl.signingSecret,
    apiUrl: sl.apiUrl,
    oauth: {
      clientId: sl.oauth.clientId,
      clientSecret: sl.oauth.clientSecret,
      stateSecret: "a-state-secret-of-at-least-thirty-two-characters",
      scopes: ["chat:write"],
      redirectUri: `https://gateway.example${OAUTH_REDIRECT_PATH}`,
    },
  });
  const { app, url } = await startApp(provider, [adapter]);
  try {
    const res = await fetch(`${url}/slack/install`, { redirect: "manual" });
    const state = new URL(res.headers.get("location")!).searchParams.get("state")!;
    const cookie = res.headers.get("set-cookie")!.split(";")[0]!;
    const code = sl.oauth.code({ teamId: "T0OAUTH" }, `https://gateway.example${OAUTH_REDIRECT_PATH}`);
    expect((await fetch(`${url}${OAUTH_REDIRECT_PATH}?${new URLSearchParams({ code, state })}`, { headers: { cookie } })).status).toBe(200);
    const rows = await app.db.query("test-installations", app.db.q.selectFrom("SlackInstallation").select(["teamId", "source"]).orderBy("teamId"));
    expect(rows).toEqual([
      { teamId: sl.identity.teamId, source: "env" },
      { teamId: "T0OAUTH", source: "oauth" },
    ]);
    expect((await sl.postEvent(`${url}/slack/events`, sl.events.message({ channel: "D0ENV001", user: "U0ENV", text: "by env" }))).status).toBe(200);
    const other = sl.eventsFor({ teamId: "T0OAUTH" });
    expect((await sl.postEvent(`${url}/slack/events`, other.message({ channel: "D0OAU001", user: "U0OAU", text: "by oauth" }))).status).toBe(200);
    await eventually(
      () => sl.sent().length,
      (n) => n >= 2,
      15_000,
      "both replies",
    );
    expect(sl.postTokens("D0ENV001")).toEqual([sl.botToken]);
    expect(sl.postTokens("D0OAU001")).toEqual([[...sl.oauth.tokens.values()].find((t) => t.grant.teamId === "T0OAUTH")!.token]);
  } finally {
    await app.stop();
    await sl.close();
  }
}

/** SLACK_PURGE_ON_UNINSTALL=true: the uninstalled workspace's sessions and transcripts are deleted; the other's are kept. */
export async function purgeOnUninstall(provider: TestProvider): Promise<void> {
  const g = await gateway(provider, { SLACK_PURGE_ON_UNINSTALL: "true" });
  try {
    await g.install({ teamId: "T0PURGE" });
    await g.install({ teamId: "T0KEEP" });
    const purge = g.sl.eventsFor({ teamId: "T0PURGE" });
    const keep = g.sl.eventsFor({ teamId: "T0KEEP" });
    expect(await g.post(purge.message({ channel: "D0PURGE1", user: "U0P", text: "forget me" }))).toBe(200);
    expect(await g.post(keep.message({ channel: "D0KEEP01", user: "U0K", text: "remember me" }))).toBe(200);
    await replies(g, "D0PURGE1", 1);
    await replies(g, "D0KEEP01", 1);
    expect(await g.sessionsOf("T0PURGE")).toHaveLength(1);
    expect(await g.post(purge.appUninstalled())).toBe(200);
    await eventually(
      () => g.sessionsOf("T0PURGE"),
      (s) => s.length === 0,
      10_000,
      "the purge",
    );
    const kept = await g.sessionsOf("T0KEEP");
    expect(kept).toHaveLength(1);
    expect(await g.transcript(kept[0]!.id)).toEqual(["remember me", "echo: remember me"]);
  } finally {
    await g.stop();
  }
}

/**
 * GROUP_POLICY=allowlist with many workspaces: `slack:T…/C…` admits that
 * workspace's channel only, and a bare channel id admits none (it could name
 * a channel of any workspace).
 */
export async function groupsByWorkspace(provider: TestProvider): Promise<void> {
  const g = await gateway(provider, { GROUP_POLICY: "allowlist", ALLOW_GROUPS: "slack:T0GRPA/C0ADMIT1,slack:C0BARE01" });
  try {
    await g.install({ teamId: "T0GRPA" });
    await g.install({ teamId: "T0GRPB" });
    const a = g.sl.eventsFor({ teamId: "T0GRPA" });
    const b = g.sl.eventsFor({ teamId: "T0GRPB" });
    expect(await g.post(b.appMention({ channel: "C0ADMIT1", user: "U0B", text: "not mine" }))).toBe(200);
    expect(await g.post(a.appMention({ channel: "C0BARE01", user: "U0A", text: "bare id" }))).toBe(200);
    expect(await g.post(a.appMention({ channel: "C0ADMIT1", user: "U0A", text: "admitted" }))).toBe(200);
    // Handled in order per chat, and the admitted one is answered: by then the two refused ones were handled too.
    expect(await replies(g, "C0ADMIT1", 1)).toEqual(["echo: admitted"]);
    await eventually(
      () => metric(g, "switchboard_group_unadmitted_total", 'platform="slack"'),
      (n) => n === 2,
      10_000,
      "the two refused groups",
    );
    expect(g.texts("C0BARE01")).toEqual([]);
  } finally {
    await g.stop();
  }
}

/**
 * Token rotation through the gateway: the installation's token (60 s) has
 * expired when a message comes (the refresher's clock runs 61 s ahead) and
 * its refresh fails twice. The event is not acknowledged until the token is
 * refreshed (Slack redelivers it, as this loop does); then it is answered
 * once, with the new token, after exactly three refresh calls.
 */
export async function rotationThroughFailures(provider: TestProvider): Promise<void> {
  const g = await gateway(provider, {}, { refresh: { now: () => Date.now() + 61_000, marginMs: 30_000, sweepEveryMs: 3_600_000 } });
  try {
    await g.install({ teamId: "T0ROT", expiresIn: 60 });
    const first = [...g.sl.oauth.tokens.values()].find((t) => t.grant.teamId === "T0ROT")!.token;
    g.sl.failNext("oauth.v2.access", { error: "internal_error" }, 2);
    const body = g.sl.eventsFor({ teamId: "T0ROT" }).message({ channel: "D0ROT001", user: "U0ROT", text: "rotate me" });
    const statuses: number[] = [];
    for (let attempt = 0; statuses.at(-1) !== 200; attempt++) {
      if (attempt > 300) throw new Error(`never acknowledged: ${statuses.join(",")}`);
      if (attempt > 0) await new Promise((r) => setTimeout(r, 100));
      const res = await g.sl.postEvent(`${g.url}/slack/events`, body, attempt ? { retryNum: Math.min(attempt, 3), retryReason: "http_error" } : {});
      statuses.push(res.status);
    }
    expect(statuses[0]).not.toBe(200);
    expect(await replies(g, "D0ROT001", 1)).toEqual(["echo: rotate me"]);
    const refreshes = g.sl.callsTo("oauth.v2.access").filter((c) => c.params.grant_type === "refresh_token");
    expect(refreshes).toHaveLength(3);
    const now = [...g.sl.oauth.tokens.values()].filter((t) => t.grant.teamId === "T0ROT").at(-1)!.token;
    expect(now).not.toBe(first);
    expect(g.sl.postTokens("D0ROT001")).toEqual([now]);
  } finally {
    await g.stop();
  }
}

/** Socket Mode with installs by OAuth: envelopes of two workspaces on the one socket, each answered with its workspace's token. */
export async function socketTwoWorkspaces(provider: TestProvider): Promise<void> {
  const g = await gateway(provider, {}, {}, "socket");
  try {
    await g.install({ teamId: "T0SOCKA" });
    await g.install({ teamId: "T0SOCKB" });
    const tokenOf = (team: string) => [...g.sl.oauth.tokens.values()].find((t) => t.grant.teamId === team)!.token;
    await g.sl.deliverEvent(g.sl.eventsFor({ teamId: "T0SOCKA" }).message({ channel: "D0SOCK01", user: "U0SA", text: "socket a" }));
    await replies(g, "D0SOCK01", 1);
    await g.sl.deliverEvent(g.sl.eventsFor({ teamId: "T0SOCKB" }).message({ channel: "D0SOCK01", user: "U0SB", text: "socket b" }));
    expect(await replies(g, "D0SOCK01", 2)).toEqual(["echo: socket a", "echo: socket b"]);
    expect(g.sl.postTokens("D0SOCK01")).toEqual([tokenOf("T0SOCKA"), tokenOf("T0SOCKB")]);
  } finally {
    await g.stop();
  }
}

/**
 * An approval card in one workspace cannot be decided from another: the same
 * channel id and the card's own button, pressed by the other workspace's
 * installer (an admin there), is refused and changes nothing; the asker's
 * press in the card's workspace completes the call.
 */
export async function approvalsStayInTheirWorkspace(provider: TestProvider): Promise<void> {
  const { model, agentFactory } = await clockAgent("use the clock", "ws-approvals");
  const g = await gateway(provider, {}, {}, "http", {
    agentFactory: agentFactory as never,
    mcpConfig: { servers: [], builtinTools: { current_time: { policy: "ask" } } },
  });
  try {
    await g.install({ teamId: "T0APA" });
    await g.install({ teamId: "T0APB" });
    const a = g.sl.eventsFor({ teamId: "T0APA" });
    const b = g.sl.eventsFor({ teamId: "T0APB" });
    expect(await g.post(a.message({ channel: "D0APPR01", user: "U0ASKER", text: "use the clock" }))).toBe(200);
    const card = (
      await eventually(
        () => g.sl.sent({ channel: "D0APPR01" }).filter((m) => m.blocks !== undefined),
        (c) => c.length === 1,
        15_000,
        "the approval card",
      )
    )[0]!;
    const approve = (card.blocks as Array<{ elements?: Array<{ action_id?: string }> }>)
      .flatMap((bl) => bl.elements ?? [])
      .map((e) => e.action_id ?? "")
      .find((id) => id.startsWith("approval:approve:"))!;
    const press = (ev: typeof a, user: string) =>
      g.sl.postInteraction(
        `${g.url}/slack/interactions`,
        ev.blockActions({ user, channel: "D0APPR01", message: { ...card.message, blocks: card.blocks }, actionId: approve }),
      );

    // Workspace B's installer, an admin of B, presses A's card button with B's installation.
    expect((await press(b, "UT0APBADMIN")).status).toBe(200);
    const refusal = await eventually(
      () => g.sl.sent({ channel: "D0APPR01" }).filter((m) => m.ephemeralTo === "UT0APBADMIN"),
      (m) => m.length === 1,
      15_000,
      "the refusal",
    );
    expect(refusal[0]!.text).toContain("no approval");
    expect(g.sl.callsTo("chat.update")).toHaveLength(0);

    // The asker, in the card's workspace, approves: the tool runs and the answer comes.
    expect((await press(a, "U0ASKER")).status).toBe(200);
    await eventually(
      () => g.sl.callsTo("chat.update").length,
      (n) => n === 1,
      15_000,
      "the decided card",
    );
    const tokenA = [...g.sl.oauth.tokens.values()].find((t) => t.grant.teamId === "T0APA")!.token;
    expect(g.sl.callsTo("chat.update").map((c) => c.token)).toEqual([tokenA]);
  } finally {
    await g.stop();
    await model.close();
  }
}
