/**
 * Twenty `/agent support` sent at once into one conversation (issue 29,
 * acceptance 2): one compare-and-rotate wins, onto a fresh session of the
 * chosen agent; every other asker is told the chat already switched. On
 * SQLite with one process and on PostgreSQL in shared-database mode (the
 * binding re-read for every event), with a turn running while the burst is
 * recorded, so every command of it was recorded before the first is handled.
 */
import { afterEach, describe, expect, it } from "vitest";
import { echoAgent, latestUserText } from "../../src/agent/echo.js";
import type { Agent } from "../../src/agent/types.js";
import { parseAgentsConfig } from "../../src/config/agents.js";
import { agentNameOf } from "../../src/session/agent-id.js";
import { eventually, startApp } from "../support/app.js";
import type { TestProvider } from "../support/db.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { unmarked } from "../support/notices.js";

const N = 20;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The echo agent, except that "hold" is answered only once release() is called. */
function heldAgent(): { agent: Agent; release(): void } {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const echo = echoAgent();
  return {
    release,
    agent: {
      name: "held",
      async *run(req) {
        if (latestUserText(req.messages).includes("hold")) await gate;
        yield* echo.run(req);
      },
    },
  };
}

// Both agents answer with the echo agent (no endpoint): what differs is the session's agent id.
const agentsConfig = parseAgentsConfig(
  JSON.stringify({
    agents: { support: { description: "support" } },
    routes: [{ match: { kind: "group" }, agent: "default", choosable: ["support"] }],
  }),
  {},
  {},
);

const MODES = [
  { provider: "sqlite" as TestProvider, env: {} as Record<string, string> },
  { provider: "postgresql" as TestProvider, env: { SHARED_DATABASE: "true" } as Record<string, string> },
];

describe(`${N} simultaneous /agent support rotate once`, () => {
  for (const { provider, env } of MODES) {
    it(`on ${provider}${env.SHARED_DATABASE ? " (shared database)" : ""}: one switch, ${N - 1} told it already switched`, async () => {
      const held = heldAgent();
      const adapter = new MemoryAdapter();
      const { app } = await startApp(provider, [adapter], env, { agentFactory: () => held.agent, agentsConfig });
      cleanups.push(() => app.stop());
      const group = "team-room";
      await adapter.ctx.inbound(adapter.group(group, "u0", "hold", { mentioned: true }));
      await Promise.all(Array.from({ length: N }, (_, i) => adapter.ctx.inbound(adapter.group(group, `u${i}`, "/agent support", { mentioned: true }))));
      held.release();
      const replies = await eventually(
        () => adapter.to(group).map((m) => unmarked(m.text)),
        (r) => r.length >= N + 1,
        30_000,
        `${N} answers to /agent`,
      );
      const switched = replies.filter((t) => t.startsWith("Switched to support")).length;
      const already = replies.filter((t) => /already switched|already runs with support/.test(t)).length;
      expect({ first: replies[0], switched, already }).toEqual({ first: "echo: hold", switched: 1, already: N - 1 });
      const sessions = (await app.registry.listAll({ includeArchived: true, limit: 1000 })).filter((s) => s.channel.includes(group));
      expect(sessions.map((s) => [agentNameOf(s.agentId), s.archived]).sort()).toEqual([
        ["default", true],
        ["support", false],
      ]);
      // The next message is answered in the chosen agent's session.
      await adapter.ctx.inbound(adapter.group(group, "u1", "after", { mentioned: true }));
      await eventually(
        () => adapter.to(group).map((m) => unmarked(m.text)),
        (r) => r.includes("echo: after"),
        15_000,
        "the answer after the switch",
      );
      const support = sessions.find((s) => !s.archived)!;
      expect((await app.registry.getUnscoped(support.id)).turnCount).toBe(1);
    });
  }
});
