/**
 * The agent's tools in the running gateway: MCP servers (the SDK-built test
 * server over stdio, and one that never starts), /tools and /healthz showing
 * their status and policy, a model that calls an MCP tool, and the tool
 * round kept in the transcript where the next turn's model sees it.
 */
import path from "node:path";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConsoleAdapter } from "../../adapters/console/index.js";
import * as ids from "../../adapters/console/ids.js";
import type { App } from "../../src/gateway/app.js";
import { FakeOpenAi, textReply, toolUsingModel } from "../fakes/openai.js";
import { eventually, startApp } from "../support/app.js";

const SERVER = path.resolve("test/fakes/mcp-server.ts");

describe("tools in the gateway", () => {
  let app: App;
  let url: string;
  let model: FakeOpenAi;
  const consoleAdapter = new ConsoleAdapter();

  beforeAll(async () => {
    model = await FakeOpenAi.start();
    model.responder = toolUsingModel({ trigger: "use echo", tool: "files__echo", args: '{"text":"from the model"}' });
    const r = await startApp(
      "sqlite",
      [consoleAdapter],
      { OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "fake-model" },
      {
        mcpConfig: {
          servers: [
            {
              name: "files",
              kind: "stdio",
              command: process.execPath,
              args: ["--import", "tsx", SERVER],
              tools: { slow: { policy: "deny" } },
              rule: { policy: "auto" },
            },
            { name: "broken", kind: "stdio", command: process.execPath, args: ["-e", "process.exit(3)"], tools: {} },
          ],
          builtinTools: {},
        },
      },
    );
    app = r.app;
    url = r.url;
  }, 60_000);
  afterAll(async () => {
    await app?.stop();
    await model?.close();
  });

  const say = async (user: string, text: string) => {
    const res = await fetch(`${url}/api/console/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ chat: { type: "private" }, sender: { id: user, name: user }, text, clientId: randomUUID() }),
    });
    expect(res.status).toBe(202);
  };
  const bot = (user: string) =>
    consoleAdapter
      .history(ids.dmChatId(user))
      .filter((m) => m.from === "bot")
      .map((m) => m.text);

  it("/tools lists every tool with its status and policy; a server that never started is shown, not missing", async () => {
    await say("tina", "/tools");
    const [list] = await eventually(
      () => bot("tina"),
      (b) => b.length >= 1,
      15_000,
      "the /tools answer",
    );
    expect(list).toContain("current_time (built-in): auto");
    expect(list).toContain("server files (stdio): ready");
    expect(list).toContain("files__echo: auto");
    expect(list).toContain("files__slow: deny");
    expect(list).toMatch(/server broken \(stdio\): restarting: could not start/);
  });

  it("/healthz shows each MCP server's state to operators", async () => {
    const h = (await (await fetch(`${url}/healthz`)).json()) as { mcp?: Array<{ name: string; state: string; error?: string }> };
    expect(h.mcp?.find((s) => s.name === "files")?.state).toBe("ready");
    expect(h.mcp?.find((s) => s.name === "broken")).toMatchObject({ state: "restarting" });
  });

  it("the model calls an MCP tool; the round is kept in the transcript and the next turn's model sees it", async () => {
    await say("uma", "please use echo");
    const [answer] = await eventually(
      () => bot("uma"),
      (b) => b.length >= 1,
      15_000,
      "the answer",
    );
    expect(answer).toBe("the tool said: echo: from the model");
    const [session] = await app.registry.listAll({ limit: 100 }).then((all) => all.filter((s) => s.channel.includes(":dm:uma")));
    const messages = await app.runner.opts.transcript.recent(session!.id, 10);
    const tool = messages.find((m) => m.role === "tool")!;
    expect(tool.content).toContain("files__echo");
    expect(tool.content).toContain("approved: auto by policy");
    expect(JSON.parse(tool.meta!)).toMatchObject({
      type: "tool",
      call: { name: "files__echo" },
      server: "files",
      decision: "approved",
      result: "echo: from the model",
    });
    expect(messages.map((m) => m.role)).toEqual(["user", "tool", "assistant"]);

    const before = model.requests.length;
    await say("uma", "and now?");
    await eventually(
      () => bot("uma"),
      (b) => b.length >= 2,
      15_000,
      "the second answer",
    );
    const body = model.requests[before]!.body as {
      messages: Array<{ role: string; content: string | null; tool_calls?: Array<{ id: string; function: { name: string } }>; tool_call_id?: string }>;
    };
    const call = body.messages.find((m) => m.role === "assistant" && m.tool_calls?.length);
    expect(call?.tool_calls?.[0]?.function.name).toBe("files__echo");
    const result = body.messages.find((m) => m.role === "tool");
    expect(result).toMatchObject({ content: "echo: from the model", tool_call_id: call!.tool_calls![0]!.id });
  });

  it("/tools lists exactly the tools a turn offers the model (built-ins, the scheduler's schedule_message, the MCP servers'), with their policies here", async () => {
    await say("vera", "/tools");
    const [list] = await eventually(
      () => bot("vera"),
      (b) => b.length >= 1,
      15_000,
      "the /tools answer",
    );
    const before = model.requests.length;
    model.enqueue(textReply(["fine"]));
    await say("vera", "hello");
    await eventually(
      () => bot("vera"),
      (b) => b.length >= 2,
      15_000,
      "the answer",
    );
    const offered = (model.requests[before]!.body as { tools?: Array<{ function: { name: string } }> }).tools?.map((t) => t.function.name) ?? [];
    // A tool line is "<name> (built-in): <policy>" or, under its server, "  <server>__<tool>: <policy>".
    const listed = list!
      .split("\n")
      .map((l) => /^\s*([a-z0-9_]+)(?: \(built-in\))?: (?:auto|ask|deny)\b/.exec(l)?.[1])
      .filter((n): n is string => n !== undefined);
    expect(offered).toContain("schedule_message");
    expect(offered).toContain("search_sessions");
    expect(listed.sort()).toEqual([...offered].sort());
    expect(list).toContain("schedule_message (built-in): ask");
  });
});

describe("tools with TOOL_MAX_ROUNDS=0", () => {
  let app: App;
  let url: string;
  let model: FakeOpenAi;
  const consoleAdapter = new ConsoleAdapter();

  beforeAll(async () => {
    model = await FakeOpenAi.start();
    const r = await startApp("sqlite", [consoleAdapter], { OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "fake-model", TOOL_MAX_ROUNDS: "0" });
    app = r.app;
    url = r.url;
  }, 60_000);
  afterAll(async () => {
    await app?.stop();
    await model?.close();
  });

  it("/tools says the model is offered none, and the model request carries none", async () => {
    const say = (text: string) =>
      fetch(`${url}/api/console/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ chat: { type: "private" }, sender: { id: "walt", name: "walt" }, text, clientId: randomUUID() }),
      });
    const bot = () =>
      consoleAdapter
        .history(ids.dmChatId("walt"))
        .filter((m) => m.from === "bot")
        .map((m) => m.text);
    await say("/tools");
    const [list] = await eventually(bot, (b) => b.length >= 1, 15_000, "the /tools answer");
    expect(list).toMatch(/offered no tools here.*TOOL_MAX_ROUNDS=0/);
    model.enqueue(textReply(["fine"]));
    await say("hello");
    await eventually(bot, (b) => b.length >= 2, 15_000, "the answer");
    expect((model.requests[0]!.body as { tools?: unknown }).tools).toBeUndefined();
  });
});
