/**
 * Several agents on one gateway (issue 29), end to end on a real SQLite file
 * and two fake model endpoints: each place reaches its routed agent's
 * endpoint with that agent's model, persona and tools; `/agent` shows and
 * switches where the route allows, `/new` keeps the chosen agent; a session
 * its route no longer allows is rotated back (and the chat told); a DM
 * rerouted between two starts gets a new session while the old one stays.
 */
import { afterEach, describe, expect, it } from "vitest";
import { parseAgentsConfig } from "../../src/config/agents.js";
import type { App, AppOptions } from "../../src/gateway/app.js";
import { agentNameOf } from "../../src/session/agent-id.js";
import { FakeOpenAi, textReply, toolUsingModel } from "../fakes/openai.js";
import { eventually } from "../support/app.js";
import { startAppOn } from "../support/app-on.js";
import { freshMigratedSqliteUrl } from "../support/db.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { unmarked } from "../support/notices.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function fakeModel(answer: string): Promise<FakeOpenAi> {
  const m = await FakeOpenAi.start();
  m.responder = () => textReply([answer]);
  cleanups.push(() => m.close());
  return m;
}

function agentsFile(support: FakeOpenAi, coder: FakeOpenAi, routes: unknown[]) {
  return parseAgentsConfig(
    JSON.stringify({
      agents: {
        support: {
          baseUrl: support.baseUrl,
          apiKeyEnv: "SUPPORT_KEY",
          model: "small-1",
          persona: "You answer support questions.",
          tools: { current_time: "auto", "*": "deny" },
          description: "answers questions about the product",
        },
        coder: { baseUrl: coder.baseUrl, apiKeyEnv: "CODER_KEY", model: "big-1", persona: "You write code." },
      },
      routes,
    }),
    { SUPPORT_KEY: "sk-support-secret", CODER_KEY: "sk-coder-secret" },
    {},
  );
}

async function start(
  url: string,
  adapter: MemoryAdapter,
  agentsConfig: ReturnType<typeof parseAgentsConfig>,
  env: Record<string, string> = {},
  opts: Omit<AppOptions, "adapters" | "agentsConfig"> = {},
): Promise<App & { base: string }> {
  const { app, url: base } = await startAppOn(url, [adapter], env, { ...opts, agentsConfig });
  // A test may stop it itself (a restart): stopped once either way.
  let stopped: Promise<void> | undefined;
  const stopApp = app.stop.bind(app);
  const stop = () => (stopped ??= stopApp());
  cleanups.push(stop);
  return Object.assign(app, { stop, base: base.replace("0.0.0.0", "127.0.0.1") });
}

const texts = (adapter: MemoryAdapter, chat: string) => adapter.to(chat).map((m) => unmarked(m.text));

async function say(adapter: MemoryAdapter, chat: string, text: string, n: number): Promise<string[]> {
  await adapter.ctx.inbound(adapter.dm(chat, text));
  return eventually(
    () => texts(adapter, chat),
    (t) => t.length >= n,
    15_000,
    `answer ${n} in ${chat}`,
  );
}

describe("agents and routes", () => {
  it("each chat reaches its routed agent's endpoint with its model, persona and tools; unrouted chats keep the default agent", async () => {
    const support = await fakeModel("support here");
    const coder = await fakeModel("coder here");
    const adapter = new MemoryAdapter();
    await start(
      await freshMigratedSqliteUrl(),
      adapter,
      agentsFile(support, coder, [
        { match: { platform: "telegram", chat: "ann" }, agent: "support" },
        { match: { chat: "bob" }, agent: "coder" },
      ]),
    );
    expect((await say(adapter, "ann", "hello", 1)).at(-1)).toBe("support here");
    expect((await say(adapter, "bob", "hello", 1)).at(-1)).toBe("coder here");
    expect((await say(adapter, "cy", "hello", 1)).at(-1)).toBe("echo: hello");

    expect(support.requests).toHaveLength(1);
    expect(coder.requests).toHaveLength(1);
    const [s] = support.requests;
    const [c] = coder.requests;
    expect(s!.body.model).toBe("small-1");
    expect(s!.headers.authorization).toBe("Bearer sk-support-secret");
    expect(s!.body.messages[0]).toMatchObject({ role: "system" });
    expect(s!.body.messages[0].content).toContain("You answer support questions.");
    // "*": "deny" leaves only current_time of the built-ins.
    expect(s!.body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(["current_time"]);
    expect(c!.body.model).toBe("big-1");
    expect(c!.headers.authorization).toBe("Bearer sk-coder-secret");
    expect(c!.body.messages[0].content).toContain("You write code.");
    expect(c!.body.tools.map((t: { function: { name: string } }) => t.function.name)).toContain("search_sessions");
  });

  it("/agent shows the agent here; /agent <name> switches where the route allows, /new keeps it, /status names it", async () => {
    const support = await fakeModel("support here");
    const coder = await fakeModel("coder here");
    const adapter = new MemoryAdapter();
    const app = await start(
      await freshMigratedSqliteUrl(),
      adapter,
      agentsFile(support, coder, [
        { match: { chat: "ann" }, agent: "support", choosable: ["coder"] },
        { match: { chat: "bob" }, agent: "coder" },
      ]),
    );
    let t = await say(adapter, "ann", "/agent", 1);
    expect(t.at(-1)).toContain("agent: support (model small-1): answers questions about the product");
    expect(t.at(-1)).toContain("You can switch to: coder (model big-1)");

    t = await say(adapter, "bob", "/agent support", 1);
    expect(t.at(-1)).toBe(`"support" cannot be chosen here. This chat has one agent.`);
    t = await say(adapter, "ann", "/agent nobody", 2);
    expect(t.at(-1)).toBe(`"nobody" cannot be chosen here. Choose one of: support, coder.`);

    await say(adapter, "ann", "before", 3);
    t = await say(adapter, "ann", "/agent coder", 4);
    expect(t.at(-1)).toMatch(/^Switched to coder, in a fresh session/);
    expect((await say(adapter, "ann", "after", 5)).at(-1)).toBe("coder here");
    // The switched session does not carry the other agent's history.
    const last = coder.requests.at(-1)!.body.messages.map((m: { content: unknown }) => m.content);
    expect(last.join("\n")).not.toContain("before");

    t = await say(adapter, "ann", "/new", 6);
    expect((await say(adapter, "ann", "again", 7)).at(-1)).toBe("coder here");
    t = await say(adapter, "ann", "/status", 8);
    expect(t.at(-1)).toContain("model: big-1");
    expect(t.at(-1)).toContain("agent: coder");

    const sessions = (await app.registry.listAll({ includeArchived: true })).filter((s) => s.channel.endsWith(":dm:ann"));
    expect(sessions.map((s) => [agentNameOf(s.agentId), s.archived]).sort()).toEqual([
      ["coder", false],
      ["coder", true],
      ["support", true],
    ]);
    // /sessions in the chat lists all three (the chosen agent's sessions hang on the routed agent's binding).
    t = await say(adapter, "ann", "/sessions", 9);
    for (const s of sessions) expect(t.at(-1)).toContain(s.id.slice(0, 8));

    t = await say(adapter, "ann", "/agent support", 10);
    expect(t.at(-1)).toMatch(/^Switched to support/);
    expect((await say(adapter, "ann", "back", 11)).at(-1)).toBe("support here");
  });

  it("a session its route no longer allows goes back to the routed agent on the next message, and the chat is told", async () => {
    const support = await fakeModel("support here");
    const coder = await fakeModel("coder here");
    const url = await freshMigratedSqliteUrl();
    const first = new MemoryAdapter();
    const app1 = await start(url, first, agentsFile(support, coder, [{ match: { chat: "ann" }, agent: "support", choosable: ["coder"] }]));
    await say(first, "ann", "/agent coder", 1);
    expect((await say(first, "ann", "hi", 2)).at(-1)).toBe("coder here");
    await app1.stop();

    const second = new MemoryAdapter();
    const app2 = await start(url, second, agentsFile(support, coder, [{ match: { chat: "ann" }, agent: "support" }]));
    const t = await say(second, "ann", "hi again", 2);
    // The line and the answer go through the chat's one queue; the line was queued first.
    expect(t.slice(0, 2)).toEqual([
      "This chat's agent is support again: coder is no longer available here. Your session with coder was kept (see /sessions).",
      "support here",
    ]);
    const sessions = (await app2.registry.listAll({ includeArchived: true })).filter((s) => s.channel.endsWith(":dm:ann"));
    expect(sessions.filter((s) => !s.archived).map((s) => agentNameOf(s.agentId))).toEqual(["support"]);
    expect(sessions.find((s) => agentNameOf(s.agentId) === "coder")?.archived).toBe(true);
  });

  it("a DM rerouted between two starts gets a new session for the new agent; the old one stays intact and listed", async () => {
    const support = await fakeModel("support here");
    const coder = await fakeModel("coder here");
    const url = await freshMigratedSqliteUrl();
    const first = new MemoryAdapter();
    const app1 = await start(url, first, agentsFile(support, coder, [{ match: { chat: "ann" }, agent: "support" }]));
    await say(first, "ann", "remember me", 1);
    const before = (await app1.registry.listAll({ includeArchived: true })).filter((s) => s.channel.endsWith(":dm:ann"));
    expect(before).toHaveLength(1);
    await app1.stop();

    const second = new MemoryAdapter();
    const app2 = await start(url, second, agentsFile(support, coder, [{ match: { chat: "ann" }, agent: "coder" }]));
    expect((await say(second, "ann", "who are you", 1)).at(-1)).toBe("coder here");
    // The coder never sees what was said to support.
    expect(JSON.stringify(coder.requests.at(-1)!.body.messages)).not.toContain("remember me");
    const after = (await app2.registry.listAll({ includeArchived: true })).filter((s) => s.channel.endsWith(":dm:ann"));
    expect(after).toHaveLength(2);
    const old = after.find((s) => s.id === before[0]!.id)!;
    expect({ agent: agentNameOf(old.agentId), archived: old.archived, turns: old.turnCount }).toEqual({ agent: "support", archived: false, turns: 1 });
    expect(agentNameOf(after.find((s) => s.id !== old.id)!.agentId)).toBe("coder");
  });

  it("an API agent request and a scheduled job in a routed chat run with the place's agent", async () => {
    const support = await fakeModel("support here");
    const coder = await fakeModel("coder here");
    const adapter = new MemoryAdapter();
    const app = await start(await freshMigratedSqliteUrl(), adapter, agentsFile(support, coder, [{ match: { chat: "ann" }, agent: "support" }]), {
      API_TOKENS: "ci:send+read:send-token-0123456789abcdef0123456789",
    });
    await say(adapter, "ann", "hello", 1);
    const res = await fetch(`${app.base}/api/v1/messages`, {
      method: "POST",
      headers: { authorization: "Bearer send-token-0123456789abcdef0123456789", "idempotency-key": "k-1", "content-type": "application/json" },
      body: JSON.stringify({ conversation: { platform: "telegram", chat: "ann" }, text: "summarize", mode: "agent" }),
    });
    expect(res.status).toBe(202);
    await eventually(
      () => support.requests.length,
      (n) => n === 2,
      15_000,
      "the API's turn at the support agent",
    );
    expect(JSON.stringify(support.requests[1]!.body.messages)).toContain("summarize");
    expect(coder.requests).toHaveLength(0);
    const target = await app.jobs.service.locate({ platform: "telegram", chat: "ann" });
    expect(agentNameOf(target.conversation.agentId)).toBe("support");
    // One conversation: the API's turn went into the chat's own session.
    const sessions = (await app.registry.listAll({ includeArchived: true })).filter((x) => x.channel.endsWith(":dm:ann"));
    expect(sessions).toHaveLength(1);
  });

  it("a stranger the access policy refuses cannot switch the agent of a place they cannot reach", async () => {
    const support = await fakeModel("support here");
    const coder = await fakeModel("coder here");
    const adapter = new MemoryAdapter();
    const app = await start(
      await freshMigratedSqliteUrl(),
      adapter,
      agentsFile(support, coder, [{ match: { kind: "private" }, agent: "support", choosable: ["coder"] }]),
      { DM_POLICY: "allowlist", ALLOW_FROM: "telegram:ann" },
    );
    const t = await say(adapter, "mallory", "/agent coder", 1);
    expect(t.at(-1)).not.toMatch(/Switched/);
    const sessions = await app.registry.listAll({ includeArchived: true });
    expect(sessions.filter((s) => s.channel.endsWith(":dm:mallory"))).toEqual([]);
    expect(support.requests.length + coder.requests.length).toBe(0);
    // The allowed person can.
    expect((await say(adapter, "ann", "/agent coder", 1)).at(-1)).toMatch(/^Switched to coder/);
  });

  it("an agent's tool patterns decide a call's policy (auto runs at once), /tools lists what it is offered; what MCP_CONFIG denies stays denied", async () => {
    for (const gatewayPolicy of ["ask", "deny"] as const) {
      const support = await fakeModel("unused");
      support.responder = toolUsingModel({ trigger: "what time", tool: "current_time", args: '{"timezone":"UTC"}' });
      const coder = await fakeModel("coder here");
      const adapter = new MemoryAdapter();
      const app = await start(
        await freshMigratedSqliteUrl(),
        adapter,
        agentsFile(support, coder, [{ match: { chat: "ann" }, agent: "support" }]),
        {},
        { mcpConfig: { servers: [], builtinTools: { current_time: { policy: gatewayPolicy } } } },
      );
      await adapter.ctx.inbound(adapter.dm("ann", "what time is it?"));
      const t = await eventually(
        () => texts(adapter, "ann"),
        (x) => x.some((m) => m.startsWith("the tool said")),
        15_000,
        "the answer after the tool",
      );
      // auto: no approval card, the tool ran; under a gateway deny the model is told it was denied.
      expect(t.join("\n")).not.toMatch(/wants to use the tool/);
      const toolResult = JSON.stringify(support.requests.at(-1)!.body.messages.at(-1));
      if (gatewayPolicy === "ask") expect(toolResult).toMatch(/UTC|\d{4}-\d{2}-\d{2}/);
      else expect(toolResult).toMatch(/denied|deny/i);
      await adapter.ctx.inbound(adapter.dm("ann", "/tools"));
      const tools = (
        await eventually(
          () => texts(adapter, "ann"),
          (x) => x.some((m) => m.startsWith("Tools:")),
          15_000,
          "the /tools answer",
        )
      ).find((m) => m.startsWith("Tools:"))!;
      expect(tools).toContain(`current_time (built-in): ${gatewayPolicy === "ask" ? "auto" : "deny"}`);
      expect(tools).not.toContain("search_sessions");
      await app.stop();
    }
  });

  it("/agent <name> cancels a pending approval only when it switches: a name refused here leaves it waiting", async () => {
    const support = await fakeModel("support here");
    const coder = await fakeModel("unused");
    coder.responder = toolUsingModel({ trigger: "what time", tool: "current_time", args: '{"timezone":"UTC"}' });
    const adapter = new MemoryAdapter();
    const app = await start(
      await freshMigratedSqliteUrl(),
      adapter,
      agentsFile(support, coder, [{ match: { chat: "bob" }, agent: "coder", choosable: ["support"] }]),
      {},
      { mcpConfig: { servers: [], builtinTools: { current_time: { policy: "ask" } } } },
    );
    await adapter.ctx.inbound(adapter.dm("bob", "what time is it?"));
    await eventually(
      () => app.tooling.approvals.waiting,
      (n) => n === 1,
      15_000,
      "the approval waiting",
    );
    // An agent that exists but is not choosable here, and one that exists nowhere: the same refusal, nothing cancelled.
    for (const [name, n] of [
      ["default", 2],
      ["nosuch", 3],
    ] as const) {
      const t = await say(adapter, "bob", `/agent ${name}`, n);
      expect(t.at(-1)).toMatch(new RegExp(`"${name}" cannot be chosen here`));
      expect(app.tooling.approvals.waiting).toBe(1);
    }
    // A switch that happens cancels it, as /new does: the turn waiting on it ends, then the chat moves.
    await adapter.ctx.inbound(adapter.dm("bob", "/agent support"));
    await eventually(
      () => texts(adapter, "bob"),
      (x) => x.some((m) => m.startsWith("Switched to support")),
      15_000,
      "the switch",
    );
    expect(app.tooling.approvals.waiting).toBe(0);
  });

  it("reflection condenses a session with its own agent", async () => {
    const support = await fakeModel("support here");
    const coder = await fakeModel("coder here");
    const adapter = new MemoryAdapter();
    await start(await freshMigratedSqliteUrl(), adapter, agentsFile(support, coder, [{ match: { chat: "ann" }, agent: "coder" }]), {
      REFLECT_EVERY_TURNS: "1",
    });
    await say(adapter, "ann", "I work on the billing service", 1);
    const review = await eventually(
      () => coder.requests.find((r) => String(r.body.messages[0]?.content).startsWith("You maintain an assistant's long-term memory")),
      (r) => r !== undefined,
      15_000,
      "the coder's review of its session",
    );
    expect(review!.body.model).toBe("big-1");
    expect(support.requests).toHaveLength(0);
  });

  it("an agent-prompt job runs with the conversation's agent, one chosen with /agent included", async () => {
    const support = await fakeModel("support here");
    const coder = await fakeModel("coder here");
    const adapter = new MemoryAdapter();
    const app = await start(
      await freshMigratedSqliteUrl(),
      adapter,
      agentsFile(support, coder, [{ match: { chat: "ann" }, agent: "support", choosable: ["coder"] }]),
    );
    await say(adapter, "ann", "/agent coder", 1);
    const target = await app.jobs.service.locate({ platform: "telegram", chat: "ann" });
    const later = new Date(Date.now() + 120_000);
    await app.jobs.service.create({
      target,
      timing: { kind: "once", spec: later.toISOString(), timezone: "UTC" },
      action: "agent",
      text: "daily digest",
      createdBy: "test",
    });
    // Due a moment from now (made for later so that making it cannot race the runner).
    const due = new Date(Date.now() + 500);
    await app.db.exec("t", app.db.q.updateTable("ScheduledJob").set({ nextRunAt: due, spec: due.toISOString() }));
    await eventually(
      () => texts(adapter, "ann"),
      (t) => t.includes("coder here"),
      30_000,
      "the job's answer in the chat",
    );
    expect(JSON.stringify(coder.requests.map((r) => r.body.messages))).toContain("daily digest");
    expect(support.requests).toHaveLength(0);
  });
});
