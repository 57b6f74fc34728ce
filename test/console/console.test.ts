import { afterEach, describe, expect, it } from "vitest";
import type { ConsoleEvent } from "../../adapters/console/index.js";
import { eventually, startConsoleApp, type ConsoleApp } from "./app.js";
import { openSse, type SseReader } from "./sse.js";

interface SessionJson {
  id: string;
  kind: string;
  channel: string;
  parentId: string | null;
  archived: boolean;
  turnCount: number;
}
interface LiveEvent {
  kind: string;
  sessionId: string;
  phase?: string;
  detail?: { previousId?: string };
}

let running: ConsoleApp | undefined;
const readers: Array<SseReader<unknown>> = [];

afterEach(async () => {
  for (const r of readers.splice(0)) r.close();
  await running?.stop();
  running = undefined;
});

async function start(env: Record<string, string> = {}, opts = {}): Promise<ConsoleApp> {
  running = await startConsoleApp(env, opts);
  return running;
}

async function sse<T>(url: string): Promise<SseReader<T>> {
  const r = await openSse<T>(url);
  readers.push(r as SseReader<unknown>);
  return r;
}

async function post(base: string, body: unknown, headers: Record<string, string> = { "content-type": "application/json" }) {
  const res = await fetch(`${base}/api/console/messages`, { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function get<T>(base: string, path: string): Promise<T> {
  const res = await fetch(`${base}${path}`);
  if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

const alice = { chat: { type: "private" }, sender: { id: "alice", name: "Alice" } } as const;
const group = (sender: string, text: string, mention?: boolean) => ({
  chat: { type: "group", id: "team", title: "Team" },
  sender: { id: sender, name: sender[0]!.toUpperCase() + sender.slice(1) },
  text,
  ...(mention !== undefined && { mention }),
});

/** The session the binding of this channel points at now. */
async function boundSession(base: string, channel: string): Promise<string | undefined> {
  const { bindings } = await get<{ bindings: Array<{ sessionId: string }> }>(base, `/api/bindings?channel=${encodeURIComponent(channel)}`);
  return bindings[0]?.sessionId;
}

async function transcript(base: string, id: string) {
  return get<{ session: SessionJson; messages: Array<{ role: string; content: string }>; bindings: Array<{ channel: string }> }>(base, `/api/sessions/${id}`);
}

describe("console adapter over real HTTP", () => {
  it("a private message is answered over SSE, and the page's history keeps both sides", async () => {
    const { base } = await start();
    const events = await sse<ConsoleEvent>(`${base}/api/console/events`);
    const r = await post(base, { ...alice, text: "hello there" });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ status: "accepted", inboundId: expect.any(String), chatId: "dm:alice", channel: "console:console:dm:alice" });

    const reply = await events.next((e) => e.type === "message" && e.chatId === "dm:alice", 10_000, "the echo reply");
    expect(reply.text).toBe("echo: hello there");
    expect(reply.messageId).toEqual(expect.any(String));

    const history = await get<{ messages: Array<{ from: string; text: string }> }>(base, "/api/console/history?chatId=dm:alice");
    expect(history.messages.map((m) => [m.from, m.text])).toEqual([
      ["user", "hello there"],
      ["bot", "echo: hello there"],
    ]);
    expect((await fetch(`${base}/api/console/history?chatId=nope`)).status).toBe(400);
  });

  it("in a group, an unaddressed message is kept as context without a reply; a mention is answered", async () => {
    const { base } = await start({ GROUP_REQUIRE_MENTION: "true" });
    const events = await sse<ConsoleEvent>(`${base}/api/console/events`);
    expect((await post(base, group("bob", "just chatting among ourselves", false))).body).toMatchObject({ status: "accepted", chatId: "group:team" });

    const sessionId = await eventually<string>(() => boundSession(base, "console:console:group:team"), "the group's binding");
    await eventually(async () => {
      const t = await transcript(base, sessionId);
      return t.messages.some((m) => m.content.includes("just chatting among ourselves")) ? true : undefined;
    }, "the unaddressed message in the group transcript");

    expect((await post(base, group("carol", "what do you think?", true))).status).toBe(202);
    const reply = await events.next((e) => e.type === "message" && e.chatId === "group:team", 10_000, "the group reply");
    // Messages of one chat are handled in order, so had the first one been answered, its reply would have come first.
    expect(reply.text).toContain("what do you think?");
    expect(reply.text).not.toContain("just chatting");

    // An @mention in the text addresses the bot too, with the checkbox off.
    expect((await post(base, group("bob", "@switchboard ping", false))).status).toBe(202);
    await events.next((e) => e.type === "message" && e.chatId === "group:team" && e.text.includes("ping"), 10_000, "the reply to an @mention");
    expect(events.events.filter((e) => e.type === "message" && e.chatId === "group:team")).toHaveLength(2);

    const t = await transcript(base, sessionId);
    expect(t.session).toMatchObject({ kind: "chat", archived: false });
    expect(t.messages.map((m) => m.content).join("\n")).toContain("just chatting among ourselves");
  });

  it("/new rotates: the old session is archived and the new one names it as parent", async () => {
    const { base } = await start();
    const events = await sse<ConsoleEvent>(`${base}/api/console/events`);
    const live = await sse<LiveEvent>(`${base}/api/events`);
    const channel = "console:console:dm:alice";

    await post(base, { ...alice, text: "first" });
    await events.next((e) => e.type === "message" && e.text === "echo: first", 10_000, "the first reply");
    const before = await eventually<string>(() => boundSession(base, channel), "alice's binding");

    expect((await post(base, { ...alice, text: "/new" })).status).toBe(202);
    const notice = await events.next((e) => e.type === "message" && /fresh session/i.test(e.text), 10_000, "the /new notice");
    const rotated = await live.next((e) => e.kind === "lifecycle" && e.phase === "rotated", 10_000, "the rotation on /api/events");
    expect(rotated.detail?.previousId).toBe(before);
    expect(notice.text).toContain(rotated.sessionId);
    await live.next((e) => e.kind === "turn-complete", 10_000, "a turn-complete event");

    const after = await eventually<string>(() => boundSession(base, channel), "the rotated binding");
    expect(after).toBe(rotated.sessionId);
    expect(after).not.toBe(before);

    const { sessions } = await get<{ sessions: SessionJson[] }>(base, "/api/sessions?archived=1&limit=10");
    const old = sessions.find((s) => s.id === before);
    const fresh = sessions.find((s) => s.id === after);
    expect(old).toMatchObject({ archived: true, channel });
    expect(fresh).toMatchObject({ archived: false, parentId: before, channel, kind: "chat" });
    // Without archived=1 only active sessions are listed.
    const active = await get<{ sessions: SessionJson[] }>(base, "/api/sessions");
    expect(active.sessions.map((s) => s.id)).toContain(after);
    expect(active.sessions.map((s) => s.id)).not.toContain(before);

    // The archived session's transcript is still readable.
    const oldT = await transcript(base, before);
    expect(oldT.messages.map((m) => m.content)).toContain("echo: first");
    expect(oldT.bindings).toEqual([]);
    expect((await transcript(base, after)).bindings.map((b) => b.channel)).toEqual([channel]);
  });

  it("a resend with the same clientId is a duplicate and is answered once", async () => {
    const { base } = await start();
    const events = await sse<ConsoleEvent>(`${base}/api/console/events`);
    const msg = { ...alice, text: "only once", clientId: "c-7f3a" };
    const first = await post(base, msg);
    const second = await post(base, msg);
    expect(first).toMatchObject({ status: 202, body: { status: "accepted" } });
    expect(second).toMatchObject({ status: 200, body: { status: "duplicate", eventId: "c-7f3a" } });
    await events.next((e) => e.type === "message" && e.text === "echo: only once");
    const history = await get<{ messages: Array<{ from: string; text: string }> }>(base, "/api/console/history?chatId=dm:alice");
    expect(history.messages.filter((m) => m.from === "user")).toHaveLength(1);
    const sessionId = (await boundSession(base, "console:console:dm:alice"))!;
    const t = await transcript(base, sessionId);
    expect(t.messages.filter((m) => m.content === "only once")).toHaveLength(1);
  });

  it("refuses malformed input with a 400 that says what is wrong", async () => {
    const { base } = await start();
    const bad = async (body: unknown, pattern: RegExp, status = 400, headers?: Record<string, string>) => {
      const r = await post(base, body, headers);
      expect(r.status, JSON.stringify(body)).toBe(status);
      expect(String(r.body.error)).toMatch(pattern);
    };
    await bad("{not json", /not valid JSON/);
    await bad({ ...alice }, /text/);
    await bad({ ...alice, text: "   " }, /text: must not be empty/);
    await bad({ ...alice, text: 5 }, /text/);
    await bad({ chat: { type: "channel", id: "x" }, sender: alice.sender, text: "hi" }, /chat\.type/);
    await bad({ chat: { type: "group" }, sender: alice.sender, text: "hi" }, /chat\.id/);
    await bad({ ...alice, sender: { id: "a:b", name: "A" }, text: "hi" }, /sender\.id/);
    await bad({ ...alice, sender: { id: "alice", name: "" }, text: "hi" }, /sender\.name/);
    await bad({ chat: { type: "private", id: "bob" }, sender: alice.sender, text: "hi" }, /chat\.id must equal sender\.id/);
    await bad({ ...alice, text: "hi", clientId: "has space" }, /clientId/);
    await bad({ ...alice, text: "hi", mention: "yes" }, /mention/);
    await bad({ ...alice, text: "hi" }, /content-type: application\/json/, 415, { "content-type": "text/plain" });
    await bad({ ...alice, text: "hi" }, /cross-origin/, 403, { "content-type": "application/json", origin: "http://evil.example" });
    // Nothing above reached the gateway.
    const { bindings } = await get<{ bindings: unknown[] }>(base, "/api/bindings");
    expect(bindings).toEqual([]);
  });

  it("/api/sessions/:id shows the session, its transcript and the binding pointing at it", async () => {
    const { base } = await start();
    const events = await sse<ConsoleEvent>(`${base}/api/console/events`);
    await post(base, { ...alice, text: "remember this" });
    await events.next((e) => e.type === "message" && e.text === "echo: remember this");
    const id = await eventually<string>(() => boundSession(base, "console:console:dm:alice"), "alice's binding");
    const t = await eventually(async () => {
      const r = await transcript(base, id);
      return r.messages.length >= 2 ? r : undefined;
    }, "the committed turn");
    expect(t.session).toMatchObject({ id, kind: "chat", archived: false, channel: "console:console:dm:alice", turnCount: 1 });
    expect(t.messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "remember this"],
      ["assistant", "echo: remember this"],
    ]);
    expect(t.bindings).toEqual([expect.objectContaining({ channel: "console:console:dm:alice", sessionId: id, scope: "private" })]);

    const missing = await fetch(`${base}/api/sessions/00000000-0000-0000-0000-000000000000`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: string }).error).toMatch(/no session/);
  });

  it("serves the page under a CSP that forbids inline script, and its assets", async () => {
    const { base } = await start();
    const page = await fetch(`${base}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    expect(page.headers.get("content-security-policy")).toMatch(/script-src 'self'/);
    const html = await page.text();
    expect(html).toContain('id="current-session"');
    expect(html).not.toMatch(/<script>(?!<\/script>)/);
    for (const [p, type] of [
      ["/console/console.js", /javascript/],
      ["/console/console.css", /text\/css/],
    ] as const) {
      const r = await fetch(`${base}${p}`);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toMatch(type);
    }
    const address = await get<{ chatId: string; channel: string }>(base, "/api/console/address?type=group&id=team&threadId=t1");
    expect(address).toMatchObject({ chatId: "group:team", threadId: "t1", channel: "console:console:group:team:thread:t1" });
    expect((await fetch(`${base}/api/console/address?type=private&id=a%3Ab`)).status).toBe(400);
  });

  it("serves every file the page loads (its stylesheets, scripts and the modules they import) with its type and the CSP", async () => {
    const { base } = await start();
    const html = await (await fetch(`${base}/`)).text();
    const loaded = [...html.matchAll(/<(?:script[^>]*\ssrc|link[^>]*\shref)="(\/console\/[^"]+)"/g)].map((m) => m[1]!);
    expect(loaded).toContain("/console/console.js");
    const seen = new Set<string>();
    const types: Record<string, RegExp> = { js: /^text\/javascript/, css: /^text\/css/ };
    for (let p = loaded.shift(); p !== undefined; p = loaded.shift()) {
      if (seen.has(p)) continue;
      seen.add(p);
      const r = await fetch(`${base}${p}`);
      expect([p, r.status]).toEqual([p, 200]);
      expect([p, r.headers.get("content-type")]).toEqual([p, expect.stringMatching(types[p.split(".").pop()!]!)]);
      expect(r.headers.get("content-security-policy")).toMatch(/script-src 'self'/);
      const text = await r.text();
      // A module's static imports, resolved against its own URL.
      if (p.endsWith(".js") && !p.includes("/vendor/"))
        for (const m of text.matchAll(/^import [^"]*"(\.\/[^"]+)";$/gm)) loaded.push(new URL(m[1]!, `http://page${p}`).pathname);
    }
    expect([...seen]).toEqual(expect.arrayContaining(["/console/console.css", "/console/vendor/marked.js", "/console/vendor/purify.js"]));
  });

  it("keeps idle event streams open with comments, and forgets a client that leaves", async () => {
    const { base, adapter } = await start({}, { keepAliveMs: 30 });
    const ctl = new AbortController();
    const res = await fetch(`${base}/api/console/events`, { signal: ctl.signal });
    expect(res.headers.get("content-type")).toMatch(/text\/event-stream/);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes(": keep-alive")) text += (await reader.read()).value ?? "";
    expect(adapter.health()).toMatchObject({ ready: true, detail: "1 page(s) connected" });
    ctl.abort();
    await eventually(async () => (adapter.health().detail === "0 page(s) connected" ? true : undefined), "the closed client to be dropped");
  });
});
