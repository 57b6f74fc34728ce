/**
 * A live session's state is never handed out as a live object: whatever a
 * getter returns (its Info, metadata, transcript window, context limits),
 * writing to it leaves the session as it was, and the next turn's model
 * sees the session's own state.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Agent, TurnRequest } from "../../src/agent/types.js";
import { DEFAULT_CONTEXT } from "../../src/runtime/live-session.js";
import { makeRuntime, message, privateChat, send, type TestRuntime } from "../support/runtime.js";

/** Tries a write the way a careless caller would; a frozen object refuses it (a TypeError in strict code), which is fine too. */
const tryWrite = (write: () => void) => {
  try {
    write();
  } catch (err) {
    expect(err).toBeInstanceOf(TypeError);
  }
};

describe("live session state is handed out as snapshots", () => {
  let rt: TestRuntime | undefined;
  afterEach(async () => {
    await rt?.close();
  });

  async function setup() {
    const seen: Array<{ metadata: Record<string, unknown>; req: TurnRequest }> = [];
    const agentFor = (metadata: Record<string, unknown>): Agent => ({
      name: "spy",
      async *run(req) {
        seen.push({ metadata: { ...metadata }, req });
        yield { type: "done", text: `answer ${seen.length}`, toolRounds: 0 };
      },
    });
    rt = await makeRuntime("sqlite", { agent: agentFor });
    const conv = privateChat();
    await (await send(rt, conv, message(conv, "first"))).done;
    const info = await rt.registry.resolveChatChannel(conv);
    const session = rt.runner.get(info.id);
    await session.setMetadata("model.name", "kept-model");
    return { rt, conv, session, seen };
  }

  it("metadata and Info: writing to what the getters returned changes nothing in the session", async () => {
    const { rt, conv, session, seen } = await setup();
    const metadata = session.metadata as Record<string, unknown>;
    tryWrite(() => {
      metadata["model.name"] = "forged-model";
    });
    tryWrite(() => {
      metadata.injected = "yes";
    });
    const info = session.info as { turnCount: number; archived: boolean; persona?: string; metadata: Record<string, unknown> };
    tryWrite(() => {
      info.turnCount = 999;
    });
    tryWrite(() => {
      info.archived = true;
    });
    tryWrite(() => {
      info.persona = "pirate";
    });
    tryWrite(() => {
      info.metadata["model.name"] = "forged-again";
    });
    expect(session.metadata).toEqual({ "model.name": "kept-model" });
    expect(session.info.turnCount).toBe(1);
    expect(session.info.archived).toBe(false);
    expect(session.info.persona).toBeUndefined();
    await (await send(rt, conv, message(conv, "second"))).done;
    expect(seen.at(-1)!.metadata).toEqual({ "model.name": "kept-model" });
    expect(seen.at(-1)!.req.system).not.toMatch(/pirate/i);
  });

  it("the transcript window: pushing to, cutting or editing what window() returned changes nothing the next turn sees", async () => {
    const { rt, conv, session, seen } = await setup();
    const window = (await session.window()) as Array<{ role: string; content: string }>;
    expect(window.map((m) => m.content)).toEqual(["first", "answer 1"]);
    tryWrite(() => {
      window.push({ role: "user", content: "forged instruction" });
    });
    tryWrite(() => {
      window[0]!.content = "edited";
    });
    tryWrite(() => {
      window.splice(1, 1);
    });
    expect((await session.window()).map((m) => m.content)).toEqual(["first", "answer 1"]);
    await (await send(rt, conv, message(conv, "second"))).done;
    expect(seen.at(-1)!.req.messages.map((m) => m.content)).toEqual(["first", "answer 1", "second"]);
  });

  it("the context limits: writing to them neither changes this session nor the defaults every session shares", async () => {
    const { session } = await setup();
    const limits = session.limits as { maxMessages: number };
    tryWrite(() => {
      limits.maxMessages = 1;
    });
    expect(session.limits.maxMessages).toBe(40);
    expect(DEFAULT_CONTEXT.maxMessages).toBe(40);
  });

  it("the window a turn remembered is the one the store gives back: the same entries, no speaker meta on a user entry", async () => {
    const { session } = await setup();
    const remembered = await session.window();
    expect(remembered.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(remembered[0]).not.toHaveProperty("meta");
    session.invalidateWindow();
    expect(await session.window()).toEqual(remembered);
  });

  it("sessions given the same limits share one frozen copy, which a write to the given object does not reach", async () => {
    const context = { maxMessages: 7, maxChars: 1000 };
    rt = await makeRuntime("sqlite", { context });
    const a = rt.runner.open(await rt.registry.resolveChatChannel(privateChat()));
    const b = rt.runner.open(await rt.registry.resolveChatChannel(privateChat()));
    expect(a.id).not.toBe(b.id);
    expect(a.limits).toBe(b.limits);
    expect(a.limits).not.toBe(context);
    expect(Object.isFrozen(a.limits)).toBe(true);
    context.maxMessages = 1;
    expect(a.limits.maxMessages).toBe(7);
  });
});
