/** The sink through a started adapter's real WebClient against FakeSlack. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SlackAdapter } from "../../../adapters/slack/index.js";
import { encodeReplyAddress } from "../../../adapters/slack/ids.js";
import { toAdapterError } from "../../../adapters/slack/errors.js";
import { type AdapterError, isAdapterError } from "../../../adapters/types.js";
import { FakeSlack } from "../../fakes/slack.js";
import { makeContext } from "./helpers.js";

let sl: FakeSlack;
let adapter: SlackAdapter;

beforeEach(async () => {
  sl = new FakeSlack();
  await sl.start();
  adapter = new SlackAdapter({ botToken: sl.botToken, signingSecret: sl.signingSecret, apiUrl: sl.apiUrl });
  await adapter.start(makeContext());
});

afterEach(async () => {
  await adapter.stop();
  await sl.close();
});

const to = (channel: string, thread_ts?: string) => encodeReplyAddress("U0FAKEBOT", { channel, teamId: "T0FAKE001", ...(thread_ts ? { thread_ts } : {}) });
const caught = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe("SlackSink", () => {
  it("send: the rendered mrkdwn as given (format.ts escapes &, <, >); thread_ts kept; returns the ts", async () => {
    const [chunk] = adapter.format.chunks("**bold** & <!channel> `a<b>`");
    const sent = await adapter.sink.send(to("C0GENERAL", "1700000000.000100"), chunk!);
    const call = sl.callsTo("chat.postMessage")[0]!;
    expect(call.params).toMatchObject({ channel: "C0GENERAL", thread_ts: "1700000000.000100", text: "*bold* &amp; &lt;!channel&gt; `a&lt;b&gt;`" });
    expect(String(call.params.mrkdwn)).toBe("true");
    expect(sl.sent()[0]).toMatchObject({ channel: "C0GENERAL", threadTs: "1700000000.000100", ts: sent.messageId });
    await adapter.sink.send(to("D0DM0001"), "plain");
    expect(sl.callsTo("chat.postMessage")[1]!.params.thread_ts).toBeUndefined();
  });

  it("findSent: a chunk posted with its key is found in the channel's history or the thread's replies, across pages, and only since the reply was written", async () => {
    const since = new Date(Date.now() - 1000);
    const dm = await adapter.sink.send(to("D0DM0002"), "first chunk", { idempotencyKey: "del-1:0" });
    expect(sl.callsTo("chat.postMessage")[0]!.params.metadata).toBeDefined();
    // 450 later messages push it back three pages (the read-back asks 200 at a time).
    for (let i = 0; i < 450; i++) await adapter.sink.send(to("D0DM0002"), `later ${i}`);
    const found = await adapter.sink.findSent!(to("D0DM0002"), ["del-1:0", "del-1:1", "del-2:0"], since);
    expect([...found]).toEqual([["del-1:0", { messageId: dm.messageId }]]);
    const history = sl.callsTo("conversations.history");
    expect(history.length).toBe(3);
    expect(history[0]!.params).toMatchObject({ channel: "D0DM0002", include_all_metadata: "true", limit: "200" });

    // Not found when the reply was written after the message (oldest bounds the search, allowing a minute of clock skew).
    expect((await adapter.sink.findSent!(to("D0DM0002"), ["del-1:0"], new Date(Date.now() + 120_000))).size).toBe(0);

    // A thread reply is looked up with conversations.replies on the thread.
    const parent = await adapter.sink.send(to("C0GENERAL"), "parent");
    const reply = await adapter.sink.send(to("C0GENERAL", parent.messageId), "in thread", { idempotencyKey: "del-3:0" });
    const inThread = await adapter.sink.findSent!(to("C0GENERAL", parent.messageId), ["del-3:0"], since);
    expect(inThread.get("del-3:0")).toEqual({ messageId: reply.messageId });
    expect(sl.callsTo("conversations.replies")[0]!.params).toMatchObject({ channel: "C0GENERAL", ts: parent.messageId });

    // A refusal is an AdapterError like any other call's.
    sl.failNext("conversations.history", { error: "missing_scope" });
    expect(isAdapterError(await caught(adapter.sink.findSent!(to("D0DM0002"), ["x:0"], since)), "Rejected")).toBe(true);
  });

  it("edit uses chat.update; typing is a no-op; react uses reactions.add and already_reacted is success", async () => {
    const { messageId } = await adapter.sink.send(to("C0GENERAL"), "v1");
    await adapter.sink.edit(to("C0GENERAL"), messageId, adapter.format.chunks("v2 <x>")[0]!);
    expect(sl.sent()[0]!.history).toEqual(["v1", "v2 &lt;x&gt;"]);
    const before = sl.calls.length;
    await adapter.sink.typing(to("C0GENERAL"));
    expect(sl.calls.length).toBe(before);
    await adapter.sink.react!(to("C0GENERAL"), messageId, "👀");
    await adapter.sink.react!(to("C0GENERAL"), messageId, ":eyes:");
    expect(sl.reactions()).toHaveLength(1);
    expect(sl.reactions()[0]).toMatchObject({ name: "eyes", timestamp: messageId });
  });

  it("a 429 becomes AdapterError RateLimited with retryAfterMs = Retry-After * 1000, with no SDK retry", async () => {
    sl.rateLimitNext("chat.postMessage", 2);
    const err = await caught(adapter.sink.send(to("C0GENERAL"), "x"));
    expect(isAdapterError(err, "RateLimited")).toBe(true);
    expect((err as AdapterError).retryAfterMs).toBe(2000);
    expect((err as AdapterError).platform).toBe("slack");
    expect(sl.callsTo("chat.postMessage")).toHaveLength(1);
  });

  it("platform errors are Rejected with a hint; 5xx is Transient", async () => {
    sl.failNext("chat.postMessage", { error: "not_in_channel" });
    const e1 = await caught(adapter.sink.send(to("C0GENERAL"), "x"));
    expect(isAdapterError(e1, "Rejected")).toBe(true);
    expect((e1 as Error).message).toContain("not_in_channel");
    const e2 = await caught(adapter.sink.send(to("nope"), "x"));
    expect(isAdapterError(e2, "Rejected")).toBe(true);
    sl.failNext("chat.update", { error: "message_not_found" });
    expect(isAdapterError(await caught(adapter.sink.edit(to("C0GENERAL"), "1.000001", "x")), "Rejected")).toBe(true);
    sl.failNext("chat.postMessage", { error: "fatal_error", status: 500 });
    expect(isAdapterError(await caught(adapter.sink.send(to("C0GENERAL"), "x")), "Transient")).toBe(true);
    // "nope" is not a channel id: refused before any call.
    expect(sl.callsTo("chat.postMessage")).toHaveLength(2);
  });

  it("maps network failures to Transient and refuses a foreign reply address", async () => {
    expect(toAdapterError({ code: "slack_webapi_request_error", original: new Error("ECONNREFUSED") }, "chat.postMessage").code).toBe("Transient");
    expect(toAdapterError({ code: "slack_webapi_http_error", statusCode: 503 }, "chat.postMessage").code).toBe("Transient");
    expect(toAdapterError({ code: "slack_webapi_http_error", statusCode: 403 }, "chat.postMessage").code).toBe("Rejected");
    const err = await caught(adapter.sink.send({ platform: "slack", botId: "U0FAKEBOT", chatId: "T0FAKE001/C0GENERAL" }, "x"));
    expect(isAdapterError(err, "Rejected")).toBe(true);
  });

  it("is Unavailable before start", async () => {
    const idle = new SlackAdapter({ botToken: sl.botToken, signingSecret: sl.signingSecret, apiUrl: sl.apiUrl });
    expect(isAdapterError(await caught(idle.sink.send(to("C0GENERAL"), "x")), "Unavailable")).toBe(true);
    expect(idle.health().ready).toBe(false);
  });
});
