/**
 * An adapter's batch (ctx.batch): the events recorded inside it are handled
 * once it ends, whichever batches overlap it; an event that work begun in a
 * batch records after the batch ended is handled, not kept for a batch that
 * is over. (The store behind it is disabled while no batch is open: on
 * Node 20 an enabled AsyncLocalStorage puts hooks on every promise.)
 */
import { afterEach, expect, it } from "vitest";
import type { App } from "../../src/gateway/app.js";
import { eventually, startApp } from "../support/app.js";
import { MemoryAdapter } from "../support/memory-adapter.js";

let app: App | undefined;
afterEach(async () => {
  await app?.stop();
  app = undefined;
});

async function started() {
  const adapter = new MemoryAdapter();
  app = (await startApp("sqlite", [adapter])).app;
  const replied = (user: string) =>
    eventually(
      () => adapter.to(user).map((m) => m.text),
      (t) => t.length >= 1,
      20_000,
      `a reply to ${user}`,
    );
  return { adapter, ctx: adapter.ctx, replied };
}

/** A promise and its resolve, to hold a batch open. */
function gate() {
  let open!: () => void;
  const p = new Promise<void>((r) => (open = r));
  return { p, open };
}

it("handles a batch's events only once it ends, and each of two overlapping batches' once that one ends", async () => {
  const { adapter, ctx, replied } = await started();
  const holdB = gate();
  const inB = gate();
  const b = ctx.batch!(async () => {
    expect((await ctx.inbound(adapter.dm("b1", "from b"))).status).toBe("accepted");
    inB.open();
    await holdB.p;
  });
  await inB.p;
  await ctx.batch!(async () => {
    expect((await ctx.inbound(adapter.dm("a1", "from a"))).status).toBe("accepted");
    // Recorded, not yet handled: a second store round trip later, still nothing sent.
    expect((await ctx.inbound(adapter.dm("a2", "also a"))).status).toBe("accepted");
    expect(adapter.to("a1")).toEqual([]);
  });
  expect(await replied("a1")).toEqual(["echo: from a"]);
  expect(await replied("a2")).toEqual(["echo: also a"]);
  // A ended while B is open: B's event is still held for B's end (one recorded outside both is not).
  expect((await ctx.inbound(adapter.dm("b2", "outside"))).status).toBe("accepted");
  expect(await replied("b2")).toEqual(["echo: outside"]);
  expect(adapter.to("b1")).toEqual([]);
  holdB.open();
  await b;
  expect(await replied("b1")).toEqual(["echo: from b"]);
});

it("handles an event that work begun in a batch records after the batch ended, while another batch is open", async () => {
  const { adapter, ctx, replied } = await started();
  const holdOther = gate();
  const otherOpen = gate();
  const other = ctx.batch!(async () => {
    otherOpen.open();
    await holdOther.p;
  });
  await otherOpen.p;
  const ended = gate();
  let late: Promise<unknown> | undefined;
  await ctx.batch!(async () => {
    late = ended.p.then(() => ctx.inbound(adapter.dm("late", "after its batch")));
  });
  ended.open();
  await late;
  expect(await replied("late")).toEqual(["echo: after its batch"]);
  holdOther.open();
  await other;
});

it("keeps batching after every batch has ended once (the store is enabled again by the next)", async () => {
  const { adapter, ctx, replied } = await started();
  await ctx.batch!(async () => void (await ctx.inbound(adapter.dm("one", "first"))));
  expect(await replied("one")).toEqual(["echo: first"]);
  await ctx.batch!(async () => {
    expect((await ctx.inbound(adapter.dm("two", "second"))).status).toBe("accepted");
    expect((await ctx.inbound(adapter.dm("three", "third"))).status).toBe("accepted");
    expect(adapter.to("two")).toEqual([]);
  });
  expect(await replied("two")).toEqual(["echo: second"]);
});
