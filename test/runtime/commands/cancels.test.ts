/**
 * A command's spec owns what it cancels (CommandSpec.cancels): /stop, /new and
 * /reset cancel their session's approvals before they run, through the hook
 * the composition root gives (CommandOptions.cancel); a command that is not
 * run here (addressed to another bot, unaddressed in a gated group, refused
 * to a non-operator) cancels nothing.
 */
import { afterEach, describe, expect, it } from "vitest";
import { personas } from "../../../src/agent/personas.js";
import { commandInterceptor } from "../../../src/runtime/commands/index.js";
import { makeRuntime, message, notices, privateChat, send, type TestRuntime } from "../../support/runtime.js";

describe("what a command cancels is in its spec", () => {
  let rt: TestRuntime;
  afterEach(async () => {
    await rt?.close();
  });

  async function start(adminCommands: string[] = []) {
    rt = await makeRuntime("sqlite", { commands: false });
    const cancelled: Array<{ sessionId: string; reason: string; noticesBefore: number; stoppedBefore: boolean }> = [];
    rt.runner.register(
      commandInterceptor({
        transcript: rt.transcript,
        personas: personas({}),
        adminCommands,
        cancel: {
          approvals: async (sessionId, reason) => {
            // What the command did is not done yet: the cancel comes first.
            cancelled.push({
              sessionId,
              reason,
              noticesBefore: notices(rt.events).length,
              stoppedBefore: rt.events.some((e) => e.kind === "lifecycle" && e.phase === "stopped"),
            });
          },
        },
      }),
    );
    return cancelled;
  }

  it("/stop, /new and /reset cancel their session's approvals before they act; other commands cancel nothing", async () => {
    const cancelled = await start();
    const conv = privateChat();
    const first = await rt.registry.resolveChatChannel(conv);
    await send(rt, conv, message(conv, "/status"));
    expect(cancelled).toEqual([]);
    await send(rt, conv, message(conv, "/stop"));
    expect(cancelled).toEqual([{ sessionId: first.id, reason: "/stop", noticesBefore: 1, stoppedBefore: false }]);
    await send(rt, conv, message(conv, "/new"));
    expect(cancelled[1]).toEqual({ sessionId: first.id, reason: "/new", noticesBefore: 2, stoppedBefore: true });
    const second = await rt.registry.resolveChatChannel(conv);
    expect(second.id).not.toBe(first.id);
    await (await send(rt, conv, message(conv, "hi"))).done;
    await send(rt, conv, message(conv, "/reset"));
    expect(cancelled[2]).toMatchObject({ sessionId: second.id, reason: "/reset", noticesBefore: 3 });
    expect(notices(rt.events)).toEqual([
      expect.stringMatching(/^session: /),
      "Nothing to stop.",
      expect.stringMatching(/^Started a fresh session/),
      expect.stringMatching(/^Started a fresh session/),
    ]);
  });

  it("a /stop that is not run here cancels nothing: addressed to another bot, unaddressed in a gated group, or refused to a non-operator", async () => {
    const cancelled = await start(["stop"]);
    const conv = privateChat();
    await send(rt, conv, message(conv, "/stop@otherbot", { botUsername: "thisbot" }));
    await send(rt, conv, message(conv, "/stop", { respond: false }));
    await send(rt, conv, message(conv, "/stop"));
    expect(notices(rt.events)).toEqual(["/stop is for operators only."]);
    expect(cancelled).toEqual([]);
    await send(rt, conv, message(conv, "/stop@thisbot", { botUsername: "thisbot", isAdmin: true }));
    expect(cancelled).toHaveLength(1);
  });
});
