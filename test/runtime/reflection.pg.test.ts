import { afterEach, describe, expect, it } from "vitest";
import type { Agent } from "../../src/agent/types.js";
import { extractiveCondenser, Reflector, type Condenser } from "../../src/runtime/reflection.js";
import { memoryScope } from "../../src/session/memory-scope.js";
import { KvStore } from "../../src/store/index.js";
import { PROVIDERS } from "../support/db.js";
import { makeRuntime, message, privateChat, send, waitUntil, type TestRuntime } from "../support/runtime.js";

describe.each(PROVIDERS)("reflection on %s", (provider) => {
  let rt: TestRuntime;
  let reflector: Reflector | undefined;
  afterEach(async () => {
    await reflector?.stop();
    await rt?.close();
  });

  async function setup(condenser: Condenser, everyTurns: number, agent?: Agent) {
    let hook: ((s: never) => void) | undefined;
    rt = await makeRuntime(provider, { agent, onTurnCommitted: (s) => hook?.(s as never) });
    reflector = new Reflector({ registry: rt.registry, transcript: rt.transcript, memories: rt.memories, kv: new KvStore(rt.t.db), condenser, everyTurns });
    hook = reflector.onTurnCommitted as never;
    return reflector;
  }

  it("condenses every N completed turns into memories of the session's scope, used by later turns", async () => {
    const systems: string[] = [];
    const agent: Agent = {
      name: "spy",
      async *run(req) {
        systems.push(req.system);
        yield { type: "done", text: "ok", toolRounds: 0 };
      },
    };
    const r = await setup(extractiveCondenser(), 2, agent);
    const conv = privateChat();
    await (await send(rt, conv, message(conv, "my name is Ada"))).done;
    await r.idle();
    const info = await rt.registry.resolveChatChannel(conv);
    expect(await rt.memories.recall(memoryScope(info).read)).toEqual([]);
    await (await send(rt, conv, message(conv, "I like tea"))).done;
    await waitUntil(async () => (await rt.memories.recall(memoryScope(info).read)).length > 0);
    expect(await rt.memories.recall(memoryScope(info).read)).toEqual(["The user said: my name is Ada", "The user said: I like tea"]);
    await (await send(rt, conv, message(conv, "what do you know?"))).done;
    expect(systems.at(-1)).toContain("The user said: my name is Ada");
    // Memories belong to the user's scope: a new session of the same chat sees them, another user does not.
    await send(rt, conv, message(conv, "/new"));
    await (await send(rt, conv, message(conv, "hello again"))).done;
    expect(systems.at(-1)).toContain("I like tea");
    const stranger = privateChat();
    await (await send(rt, stranger, message(stranger, "hi"))).done;
    expect(systems.at(-1)).not.toContain("Ada");
  });

  it("never delays a reply: the reply is out while a slow review is still running", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const r = await setup({ condense: async () => (await gate, ["slow memory"]) }, 1);
    const conv = privateChat();
    const outcome = await (await send(rt, conv, message(conv, "hello"))).done;
    expect(outcome).toBe("answered");
    expect(rt.events.some((e) => e.kind === "text-final" && e.text === "echo: hello")).toBe(true);
    release();
    await r.idle();
    const info = await rt.registry.resolveChatChannel(conv);
    expect(await rt.memories.recall(memoryScope(info).read)).toEqual(["slow memory"]);
  });

  it("a failed review is logged and retried by the next sweep, without repeating what was reviewed", async () => {
    let fail = true;
    const seen: number[] = [];
    const r = await setup(
      {
        condense: async (m) => {
          seen.push(m.length);
          if (fail) throw new Error("model down");
          return [`${m.length} messages`];
        },
      },
      1,
    );
    const conv = privateChat();
    await (await send(rt, conv, message(conv, "one"))).done;
    await waitUntil(() => r.failures === 1);
    fail = false;
    expect(await r.sweep()).toBeGreaterThanOrEqual(1);
    await r.idle();
    const info = await rt.registry.resolveChatChannel(conv);
    expect(await rt.memories.recall(memoryScope(info).read)).toEqual(["2 messages"]);
    expect(await r.sweep()).toBe(0); // nothing new since the last review
  });

  it("REFLECT_EVERY_TURNS=0 turns reflection off", async () => {
    const r = await setup(extractiveCondenser(), 0);
    const conv = privateChat();
    await (await send(rt, conv, message(conv, "x"))).done;
    await r.idle();
    expect(await r.sweep()).toBe(0);
    const info = await rt.registry.resolveChatChannel(conv);
    expect(await rt.memories.recall(memoryScope(info).read)).toEqual([]);
  });

  it("a group's sessions share the group's memory scope", async () => {
    const r = await setup(extractiveCondenser(), 1);
    const g = await rt.identities.groupId("slack", `T1/C${Date.now()}`);
    const conv = { agentId: "bot", userId: g, groupId: g, channel: "slack:T1:bot:group:C1" };
    await (await send(rt, conv, message(conv, "the deploy is on friday"))).done;
    await r.idle();
    const info = await rt.registry.resolveChatChannel(conv);
    expect(memoryScope(info).kind).toBe("group");
    expect(await rt.memories.recall(memoryScope(info).read)).toEqual(["The user said: the deploy is on friday"]);
  });
});
