/**
 * /new through the whole gateway when the database does not acknowledge the
 * rotation's commit: the chat hears what really happened (verifyRotation
 * re-reads the binding), and the conversation continues in the session the
 * database holds.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../../src/gateway/app.js";
import { eventually, startApp } from "../support/app.js";
import { PROVIDERS } from "../support/db.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { prisma } from "../support/prisma.js";

describe.each(PROVIDERS)("/new with a lost commit acknowledgement, through the gateway, on %s", (provider) => {
  let app: App | undefined;
  afterEach(async () => {
    await app?.stop();
    app = undefined;
  });

  for (const fault of ["after-commit", "before-commit"] as const) {
    it(`${fault}: the reply says what the database holds`, async () => {
      let armed = false;
      const adapter = new MemoryAdapter();
      const lose = (op: string) => {
        if (op !== "rotate" || !armed) return;
        armed = false;
        throw new Error(fault === "after-commit" ? "connection reset while reading the COMMIT reply" : "connection reset while sending COMMIT");
      };
      ({ app } = await startApp(provider, [adapter], {}, { faults: fault === "after-commit" ? { afterCommit: lose } : { beforeCommit: lose } }));
      const a = app;
      const chat = `lost-${fault}`;
      const say = async (text: string, n: number) => {
        await adapter.ctx.inbound(adapter.dm(chat, text));
        return (
          await eventually(
            () => adapter.to(chat).map((s) => s.text),
            (r) => r.length >= n,
            15_000,
            `reply ${n}`,
          )
        )[n - 1]!;
      };
      expect(await say("hello", 1)).toBe("echo: hello");
      const first = (await a.registry.listAll({ includeArchived: true })).find((s) => s.channel.endsWith(`:dm:${chat}`))!;
      armed = true;
      const answer = await say("/new", 2);
      expect(armed).toBe(false); // the fault fired
      const sessions = (await a.registry.listAll({ includeArchived: true })).filter((s) => s.channel.endsWith(`:dm:${chat}`));
      if (fault === "after-commit") {
        // Committed: one fresh session, announced once, and the chat is in it.
        const current = sessions.find((s) => !s.archived)!;
        expect(sessions).toHaveLength(2);
        expect(current.parentId).toBe(first.id);
        expect(answer).toBe(`Started a fresh session. session: ${current.id}`);
        expect(await say("/status", 3)).toContain(`session: ${current.id}`);
      } else {
        // Never landed: nothing changed, and the user is told to try again.
        expect(sessions.map((s) => [s.id, s.archived])).toEqual([[first.id, false]]);
        expect(answer).toBe("Could not start a fresh session (the database did not confirm it). Please send /new again.");
        expect(await say("/status", 3)).toContain(`session: ${first.id}`);
        expect(await say("/new", 4)).toMatch(/^Started a fresh session\. session: /);
      }
      // Every event was handled exactly once: none is left to replay.
      expect(await prisma(a.db).read((db) => db.inboundEvent.count({ where: { status: "received" } }))).toBe(0);
    });
  }
});
