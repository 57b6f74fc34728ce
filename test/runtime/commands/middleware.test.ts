import { describe, expect, it } from "vitest";
import type { MessageEvent } from "../../../src/runtime/events.js";
import { InterceptorChain, type InterceptContext } from "../../../src/runtime/interceptors.js";

const event = (text: string): MessageEvent =>
  ({
    type: "message",
    text,
    respond: true,
    conversation: { agentId: "bot", userId: "u", channel: "telegram:bot:dm:1" },
    origin: { platform: "telegram", chatId: "1", senderId: "s" },
    replyTo: { platform: "telegram", botId: "bot", chatId: "1" },
    receivedAt: new Date(0),
  }) as MessageEvent;

// The chain never reads the context: it hands it to each middleware as it is.
const ctx = { notify: () => {} } as unknown as InterceptContext;

describe("the interceptor chain is middleware (issue #27)", () => {
  it("next() runs the rest of the chain inside the caller, so code after it sees the rest done", async () => {
    const chain = new InterceptorChain();
    const order: string[] = [];
    chain.register(async (_ev, _ctx, next) => {
      order.push("outer in");
      await next();
      order.push("outer out");
    });
    chain.register(async (ev, _ctx, next) => {
      order.push(`inner ${ev.text}`);
      await next({ ...ev, text: `${ev.text}!` });
    });
    expect((await chain.run(event("hi"), ctx))?.text).toBe("hi!");
    expect(order).toEqual(["outer in", "inner hi", "outer out"]);
  });

  it("a middleware that does not call next consumes the event: the chain yields null and the rest never runs", async () => {
    const chain = new InterceptorChain();
    const seen: string[] = [];
    chain.register(() => {});
    chain.register((ev) => void seen.push(ev.text));
    expect(await chain.run(event("eat"), ctx)).toBeNull();
    expect(seen).toEqual([]);
  });

  it("calling next twice is refused, and a middleware removed by its remover no longer runs", async () => {
    const chain = new InterceptorChain();
    const remove = chain.register(async (_ev, _ctx, next) => {
      await next();
      await next();
    });
    await expect(chain.run(event("x"), ctx)).rejects.toThrow(/next\(\) twice/);
    remove();
    remove();
    expect((await chain.run(event("x"), ctx))?.text).toBe("x");
  });
});
