/**
 * FakeSlack driven by the real Bolt App: HTTP mode (HTTPReceiver, signed
 * Events API requests) and Socket Mode; plus the Web API through Bolt's WebClient.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { App, LogLevel, SocketModeReceiver, webApi } from "@slack/bolt";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeSlack } from "./slack.js";

let sl: FakeSlack;
let apps: App[] = [];

beforeEach(async () => {
  sl = new FakeSlack();
  await sl.start();
});

afterEach(async () => {
  for (const a of apps) await a.stop();
  apps = [];
  await sl.close();
});

/** The loose view of a message event the tests need (Bolt's message union is wide). */
interface MsgView {
  subtype?: string;
  text?: string;
  channel: string;
  channel_type?: string;
  ts: string;
  thread_ts?: string;
  user?: string;
  message?: { text?: string };
}

const clientOptions = (): { slackApiUrl: string; retryConfig: { retries: number } } => ({ slackApiUrl: sl.apiUrl, retryConfig: { retries: 0 } });

async function httpApp(setup: (app: App) => void): Promise<{ app: App; eventsUrl: string }> {
  const app = new App({ token: sl.botToken, signingSecret: sl.signingSecret, clientOptions: clientOptions(), logLevel: LogLevel.ERROR });
  setup(app);
  apps.push(app);
  const server = (await app.start({ port: 0, host: "127.0.0.1" })) as Server;
  return { app, eventsUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events` };
}

describe("FakeSlack with Bolt in HTTP mode", () => {
  it("signed events reach listeners; replies, thread replies and reactions are recorded; bad signatures are refused", async () => {
    const seen: string[] = [];
    const retries: (number | undefined)[] = [];
    const { eventsUrl } = await httpApp((app) => {
      app.message(async ({ message, say, context }) => {
        const m = message as unknown as MsgView;
        retries.push(context.retryNum);
        if (m.subtype === "message_changed") return void seen.push(`changed:${m.message?.text}`);
        seen.push(`${m.channel_type}:${m.text}`);
        if (m.channel_type === "im") await say(`echo ${m.text}`);
        else if (m.text?.includes(`<@${context.botUserId}>`)) await say({ text: `threaded ${m.text}`, thread_ts: m.thread_ts ?? m.ts });
      });
      app.event("app_mention", async ({ event, client }) => {
        seen.push(`mention:${event.text}`);
        await client.reactions.add({ channel: event.channel, timestamp: event.ts, name: "eyes" });
      });
    });

    const challenge = await sl.postEvent(eventsUrl, sl.events.urlVerification("c-123"));
    expect(challenge.status).toBe(200);
    expect(JSON.parse(challenge.body)).toEqual({ challenge: "c-123" });

    const dm = await sl.postEvent(eventsUrl, sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "hi in dm" }));
    expect(dm.status).toBe(200);
    expect(dm.ackMs).toBeLessThan(2000);
    await sl.waitFor(() => sl.sent({ channel: "D0DM0001" })[0]);

    const parent = sl.events.message({ channel: "C0GENERAL", user: "U0ALICE", text: "thread root" });
    await sl.postEvent(eventsUrl, parent);
    const parentTs = String(parent.event.ts);
    const reply = sl.events.message({ channel: "C0GENERAL", user: "U0BOB", text: `<@${sl.identity.botUserId}> in thread`, threadTs: parentTs });
    await sl.postEvent(eventsUrl, reply);
    const mention = sl.events.appMention({ channel: "C0GENERAL", user: "U0BOB", text: "look", ts: String(reply.event.ts), threadTs: parentTs });
    await sl.postEvent(eventsUrl, mention, { retryNum: 1, retryReason: "http_timeout" });
    await sl.waitFor(() => sl.sent({ threadTs: parentTs })[0] && sl.reactions()[0]);

    expect(sl.sent({ channel: "D0DM0001" })[0]).toMatchObject({ text: "echo hi in dm" });
    expect(sl.sent({ threadTs: parentTs })[0]).toMatchObject({ channel: "C0GENERAL", text: `threaded <@U0FAKEBOT> in thread` });
    expect(sl.reactions()[0]).toMatchObject({ channel: "C0GENERAL", timestamp: reply.event.ts, name: "eyes" });
    expect(sl.callsTo("chat.postMessage")[0]).toMatchObject({ token: sl.botToken, contentType: "application/x-www-form-urlencoded" });

    // Own bot_message is dropped by Bolt's ignoreSelf; an edit arrives as message_changed.
    await sl.postEvent(eventsUrl, sl.events.botMessage({ channel: "D0DM0001", text: "my echo", botId: sl.identity.botId }));
    await sl.postEvent(eventsUrl, sl.events.messageChanged({ channel: "D0DM0001", user: "U0ALICE", ts: String(parent.event.ts), text: "edited!" }));
    await sl.waitFor(() => seen.includes("changed:edited!"));
    expect(seen).toEqual(["im:hi in dm", "channel:thread root", `channel:<@U0FAKEBOT> in thread`, "mention:<@U0FAKEBOT> look", "changed:edited!"]);
    expect(retries).toEqual([undefined, undefined, undefined, undefined]);

    const before = sl.sent().length;
    const forged = await sl.postEvent(eventsUrl, sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "forged" }), { secret: "wrong" });
    expect(forged.status).toBe(401);
    const stale = await sl.postEvent(eventsUrl, sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "old" }), {
      timestamp: Math.floor(Date.now() / 1000) - 600,
    });
    expect(stale.status).toBe(401);
    expect(sl.sent().length).toBe(before);
  });

  it("passes X-Slack-Retry-Num to the app's context and keeps mpim/group channel types", async () => {
    const got: { type?: string; num?: number; reason?: string }[] = [];
    const { eventsUrl } = await httpApp((app) =>
      app.message(
        async ({ message, context }) =>
          void got.push({ type: (message as unknown as MsgView).channel_type, num: context.retryNum, reason: context.retryReason }),
      ),
    );
    const body = sl.events.message({ channel: "C0GENERAL", user: "U0ALICE", text: "again" });
    await sl.postEvent(eventsUrl, body);
    await sl.postEvent(eventsUrl, body, { retryNum: 2, retryReason: "http_timeout" });
    sl.addConversation({ id: "G0MPIM01", type: "mpim", members: ["U0ALICE", "U0BOB", "U0FAKEBOT"] });
    await sl.postEvent(eventsUrl, sl.events.message({ channel: "G0MPIM01", user: "U0BOB", text: "group dm" }));
    await sl.postEvent(eventsUrl, sl.events.message({ channel: "G0PRIVATE", user: "U0BOB", text: "private channel" }));
    await sl.waitFor(() => got.length === 4);
    expect(got).toEqual([
      { type: "channel", num: undefined, reason: undefined },
      { type: "channel", num: 2, reason: "http_timeout" },
      { type: "mpim", num: undefined, reason: undefined },
      { type: "group", num: undefined, reason: undefined },
    ]);
  });

  it("slash commands are posted form-encoded and signed; ack body and respond() via response_url are recorded", async () => {
    const { eventsUrl } = await httpApp((app) =>
      app.command("/ask", async ({ command, ack, respond }) => {
        await ack({ text: `thinking about ${command.text}` });
        await respond({ text: `answer to ${command.text}`, response_type: "in_channel" });
      }),
    );
    const fields = sl.events.slashCommand({ command: "/ask", text: "life", user: "U0ALICE", channel: "C0GENERAL" });
    const res = await sl.postCommand(eventsUrl, fields);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ text: "thinking about life" });
    const posted = await sl.waitFor(() => sl.responses()[0]);
    expect(fields.response_url).toBe(`${sl.url}/response/${posted.id}`);
    expect(posted.body).toMatchObject({ text: "answer to life", response_type: "in_channel" });
  });
});

describe("FakeSlack Web API through Bolt's WebClient", () => {
  it("sends the token's scopes in x-oauth-scopes, which the WebClient reads into response_metadata.scopes", async () => {
    const c = new webApi.WebClient(sl.botToken, clientOptions());
    expect((await c.auth.test()).response_metadata?.scopes).toEqual([...FakeSlack.MANIFEST_SCOPES]);
    sl.scopes = ["chat:write"];
    expect((await c.auth.test()).response_metadata?.scopes).toEqual(["chat:write"]);
    const app = new webApi.WebClient(sl.appToken, clientOptions());
    expect((await app.apiCall("apps.connections.open")).response_metadata?.scopes).toEqual(["connections:write"]);
  });

  it("answers chat.update, reactions.add, conversations.info and users.info with Slack's shapes and errors", async () => {
    const { app } = await httpApp(() => undefined);
    const c = app.client;
    sl.addUser({ id: "U0ALICE", name: "alice", real_name: "Alice Example" });
    sl.addConversation({ id: "C0PRIV", type: "group", name: "secret-room" });

    const posted = await c.chat.postMessage({ channel: "C0GENERAL", text: "v1" });
    expect(posted).toMatchObject({ ok: true, channel: "C0GENERAL", message: { text: "v1", bot_id: "B0FAKEBOT", user: "U0FAKEBOT" } });
    const updated = await c.chat.update({ channel: "C0GENERAL", ts: posted.ts!, text: "v2" });
    expect(updated).toMatchObject({ ok: true, ts: posted.ts, text: "v2" });
    expect(sl.sent()[0]!.history).toEqual(["v1", "v2"]);
    await c.reactions.add({ channel: "C0GENERAL", timestamp: posted.ts!, name: "white_check_mark" });

    const errorOf = (p: Promise<unknown>): Promise<string | undefined> =>
      p.then(
        () => undefined,
        (e: { data?: { error?: string } }) => e.data?.error,
      );
    expect(await errorOf(c.chat.update({ channel: "C0GENERAL", ts: "1.000001", text: "x" }))).toBe("message_not_found");
    expect(await errorOf(c.reactions.add({ channel: "C0GENERAL", timestamp: posted.ts!, name: "white_check_mark" }))).toBe("already_reacted");
    expect(await errorOf(c.chat.postMessage({ channel: "C0GENERAL", text: "" }))).toBe("no_text");
    expect(await errorOf(c.chat.postMessage({ channel: "nope", text: "x" }))).toBe("channel_not_found");
    expect(await errorOf(c.apiCall("no.such.method"))).toBe("unknown_method");
    expect(await errorOf(new webApi.WebClient("xoxb-wrong", clientOptions()).auth.test())).toBe("invalid_auth");

    expect((await c.conversations.info({ channel: "D0DM0001" })).channel).toMatchObject({ id: "D0DM0001", is_im: true });
    expect((await c.conversations.info({ channel: "C0PRIV" })).channel).toMatchObject({ name: "secret-room", is_group: true, is_private: true });
    expect((await c.users.info({ user: "U0ALICE" })).user).toMatchObject({
      id: "U0ALICE",
      name: "alice",
      real_name: "Alice Example",
      profile: { display_name: "alice" },
    });
    expect(await c.auth.test()).toMatchObject({ user_id: "U0FAKEBOT", team_id: "T0FAKE001", bot_id: "B0FAKEBOT" });
  });

  it("conversations.history and .replies: newest-first top level vs a thread oldest-first, oldest/latest/inclusive, cursor pages, metadata only when asked", async () => {
    const { app } = await httpApp(() => undefined);
    const c = app.client;
    const ch = "C0HISTORY";
    const posts: string[] = [];
    for (let i = 0; i < 5; i++)
      posts.push(
        (await c.chat.postMessage({ channel: ch, text: `m${i}`, metadata: { event_type: "switchboard_reply", event_payload: { key: `k${i}` } } })).ts!,
      );
    const parent = posts[1]!;
    const replies: string[] = [];
    for (let i = 0; i < 3; i++)
      replies.push(
        (
          await c.chat.postMessage({
            channel: ch,
            thread_ts: parent,
            text: `r${i}`,
            metadata: { event_type: "switchboard_reply", event_payload: { key: `t${i}` } },
          })
        ).ts!,
      );

    // Top level only, newest first; no metadata unless include_all_metadata.
    const plain = await c.conversations.history({ channel: ch });
    expect(plain.messages!.map((m) => m.text)).toEqual(["m4", "m3", "m2", "m1", "m0"]);
    expect(plain.messages!.some((m) => "metadata" in m)).toBe(false);
    expect(plain.has_more).toBe(false);

    // Pages of 2 through the cursor, with metadata.
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const r = await c.conversations.history({ channel: ch, limit: 2, include_all_metadata: true, ...(cursor ? { cursor } : {}) });
      pages++;
      for (const m of r.messages!) seen.push(String((m.metadata?.event_payload as { key?: string } | undefined)?.key));
      cursor = r.has_more ? r.response_metadata?.next_cursor : undefined;
      if (r.has_more) expect(cursor).toBeTruthy();
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(["k4", "k3", "k2", "k1", "k0"]);

    // oldest is exclusive unless inclusive=true; latest bounds the other end.
    expect((await c.conversations.history({ channel: ch, oldest: posts[2]! })).messages!.map((m) => m.text)).toEqual(["m4", "m3"]);
    expect((await c.conversations.history({ channel: ch, oldest: posts[2]!, inclusive: true })).messages!.map((m) => m.text)).toEqual(["m4", "m3", "m2"]);
    expect((await c.conversations.history({ channel: ch, latest: posts[2]! })).messages!.map((m) => m.text)).toEqual(["m1", "m0"]);

    // A thread: the parent first, then its replies oldest first, from the parent's ts or a reply's.
    const thread = await c.conversations.replies({ channel: ch, ts: parent, include_all_metadata: true });
    expect(thread.messages!.map((m) => m.text)).toEqual(["m1", "r0", "r1", "r2"]);
    expect(thread.messages![3]!.metadata).toEqual({ event_type: "switchboard_reply", event_payload: { key: "t2" } });
    expect((await c.conversations.replies({ channel: ch, ts: replies[0]! })).messages!.map((m) => m.text)).toEqual(["m1", "r0", "r1", "r2"]);
    expect((await c.conversations.replies({ channel: ch, ts: parent, oldest: replies[0]! })).messages!.map((m) => m.text)).toEqual(["m1", "r1", "r2"]);
    const first = await c.conversations.replies({ channel: ch, ts: parent, limit: 3 });
    expect(first.messages!.map((m) => m.text)).toEqual(["m1", "r0", "r1"]);
    const rest = await c.conversations.replies({ channel: ch, ts: parent, limit: 3, cursor: first.response_metadata!.next_cursor! });
    expect(rest.messages!.map((m) => m.text)).toEqual(["r2"]);

    const errorOf = (p: Promise<unknown>): Promise<string | undefined> =>
      p.then(
        () => undefined,
        (e: { data?: { error?: string } }) => e.data?.error,
      );
    expect(await errorOf(c.conversations.replies({ channel: ch, ts: "1.000001" }))).toBe("thread_not_found");
    expect(await errorOf(c.conversations.history({ channel: ch, cursor: "bm9wZQ==" }))).toBe("invalid_cursor");
    expect(await errorOf(c.conversations.history({ channel: ch, oldest: "yesterday" }))).toBe("invalid_ts_oldest");
    expect(await errorOf(c.conversations.history({ channel: "nope" }))).toBe("channel_not_found");
  });

  it("429 carries Retry-After: rejectRateLimitedCalls surfaces it, and the WebClient's own retry waits it out", async () => {
    sl.rateLimitNext("chat.postMessage", 2);
    const strict = new webApi.WebClient(sl.botToken, { ...clientOptions(), rejectRateLimitedCalls: true });
    const err = (await strict.chat.postMessage({ channel: "C0GENERAL", text: "x" }).catch((e: unknown) => e)) as { code?: string; retryAfter?: number };
    expect(err.code).toBe(webApi.ErrorCode.RateLimitedError);
    expect(err.retryAfter).toBe(2);
    expect(sl.callsTo("chat.postMessage")[0]).toMatchObject({ status: 429, response: { ok: false, error: "ratelimited" } });

    sl.rateLimitNext("chat.postMessage", 1);
    const retrying = new webApi.WebClient(sl.botToken, {
      slackApiUrl: sl.apiUrl,
      retryConfig: { retries: 1, minTimeout: 0, maxTimeout: 0 },
      logLevel: LogLevel.ERROR,
    });
    const ok = await retrying.chat.postMessage({ channel: "C0GENERAL", text: "eventually" });
    expect(ok.ok).toBe(true);
    const calls = sl.callsTo("chat.postMessage").slice(1);
    expect(calls.map((c) => c.status)).toEqual([429, 200]);
    expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(950);
  });
});

describe("FakeSlack with Bolt in Socket Mode", () => {
  async function socketApp(setup: (app: App) => void): Promise<App> {
    // A custom receiver only to shorten the reconnect delay (clientPingTimeout); Socket Mode's own
    // WebClient (apps.connections.open) takes its options from installerOptions.clientOptions.
    const receiver = new SocketModeReceiver({
      appToken: sl.appToken,
      clientPingTimeout: 200,
      logLevel: LogLevel.ERROR,
      installerOptions: { clientOptions: clientOptions() },
    });
    const app = new App({ token: sl.botToken, receiver, clientOptions: clientOptions(), logLevel: LogLevel.ERROR });
    setup(app);
    apps.push(app);
    await app.start();
    return app;
  }

  it("hello, events_api envelopes acked, replies recorded, redelivery carries retry_attempt, slash command ack payload", async () => {
    const seen: { text?: string; retryNum?: number; retryReason?: string }[] = [];
    await socketApp((app) => {
      app.message(async ({ message, say, context }) => {
        const m = message as unknown as MsgView;
        seen.push({ text: m.text, retryNum: context.retryNum, retryReason: context.retryReason });
        if (context.retryNum === undefined || context.retryNum === 0) await say(`echo ${m.text}`);
      });
      app.command("/ask", async ({ command, ack }) => ack({ text: `on it: ${command.text}` }));
    });
    expect(sl.callsTo("apps.connections.open")[0]!.token).toBe(sl.appToken);
    expect(sl.socketConnections).toEqual({ open: 1, opened: 1 });

    const ack = await sl.deliverEvent(sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "over socket" }));
    expect(ack.type).toBe("events_api");
    expect(ack.ms).toBeLessThan(2000);
    await sl.waitFor(() => sl.sent()[0]);
    expect(sl.sent()[0]).toMatchObject({ channel: "D0DM0001", text: "echo over socket" });

    const first = sl.envelopes()[0]!;
    expect(first).toMatchObject({ type: "events_api", retry_attempt: 0, accepts_response_payload: false });
    const again = sl.redeliver(first.envelope_id, "timeout");
    expect(again.envelope_id).not.toBe(first.envelope_id);
    await sl.waitForAck(again.envelope_id);
    await sl.waitFor(() => seen.length === 2);
    expect(seen).toEqual([
      { text: "over socket", retryNum: 0, retryReason: "" },
      { text: "over socket", retryNum: 1, retryReason: "timeout" },
    ]);
    expect(sl.sent()).toHaveLength(1);

    const cmd = await sl.deliverCommand(sl.events.slashCommand({ command: "/ask", text: "x", user: "U0ALICE", channel: "C0GENERAL" }));
    expect(cmd).toMatchObject({ type: "slash_commands", payload: { text: "on it: x" } });
    expect(sl.unacked()).toEqual([]);
  });

  it("reconnects after Slack's disconnect message and keeps acking on the new connection", async () => {
    await socketApp((app) => app.message(async ({ say }) => void (await say("still here"))));
    sl.requestDisconnect("refresh_requested");
    await sl.waitFor(() => sl.socketConnections.opened === 2 && sl.socketConnections.open === 1, 5000);
    expect(sl.callsTo("apps.connections.open")).toHaveLength(2);
    await sl.deliverEvent(sl.events.message({ channel: "C0GENERAL", user: "U0ALICE", text: "after reconnect" }));
    await sl.waitFor(() => sl.sent()[0]);
  });
});

describe("FakeSlack conversations.leave", () => {
  it("leaves a channel (ok, then not_in_channel: true); posting there answers not_in_channel; a DM cannot be left", async () => {
    const c = new webApi.WebClient(sl.botToken, clientOptions());
    await c.chat.postMessage({ channel: "C0STRANGE", text: "before" });
    expect(await c.conversations.leave({ channel: "C0STRANGE" })).toMatchObject({ ok: true });
    expect(sl.hasLeft("C0STRANGE")).toBe(true);
    expect(await c.conversations.leave({ channel: "C0STRANGE" })).toMatchObject({ ok: true, not_in_channel: true });
    expect((await c.conversations.info({ channel: "C0STRANGE" })).channel).toMatchObject({ is_member: false });
    const errorOf = (p: Promise<unknown>): Promise<string | undefined> =>
      p.then(
        () => undefined,
        (e: { data?: { error?: string } }) => e.data?.error,
      );
    expect(await errorOf(c.chat.postMessage({ channel: "C0STRANGE", text: "after" }))).toBe("not_in_channel");
    expect(await errorOf(c.conversations.leave({ channel: "D0ALICE" }))).toBe("method_not_supported_for_channel_type");
  });
});
