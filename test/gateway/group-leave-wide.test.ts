/**
 * GROUP_UNADMITTED=leave where a leave takes the bot out of more than the
 * group it is made in (Adapter.leaveTakesAlso; Discord leaves the whole
 * server): UnadmittedGroups leaves only when every other chat is known and
 * none is admitted. The end-to-end case over discord.js is in
 * test/adapters/discord/leave-guild.test.ts; these are the cases a fake
 * adapter shows more plainly (an unknown list, a check that throws).
 */
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { Adapter } from "../../adapters/types.js";
import { UnadmittedGroups } from "../../src/gateway/inbound/groups.js";
import { GatewayMetrics } from "../../src/gateway/metrics.js";
import { createLogger } from "../../src/log.js";
import { MemoryAdapter } from "../support/memory-adapter.js";

function setup(leaveTakesAlso: Adapter["leaveTakesAlso"]) {
  const lines: string[] = [];
  const destination = new Writable({
    write: (c: Buffer, _e, cb) => {
      lines.push(c.toString("utf8"));
      cb();
    },
  });
  const metrics = new GatewayMetrics();
  const leaves: string[] = [];
  const groups = new UnadmittedGroups({
    log: createLogger({ level: "info", destination }),
    metrics,
    outbound: {
      enqueue: async (item) => {
        leaves.push(item.chatId);
        return true;
      },
    },
  });
  const a = new MemoryAdapter();
  if (leaveTakesAlso) Object.assign(a, { leaveTakesAlso });
  const outcomes = async () => Object.fromEntries((await metrics.groupsUnadmitted.get()).values.map((v) => [v.labels.outcome, v.value]));
  const errors = async () => (await metrics.internalErrors.get()).values.reduce((n, v) => n + v.value, 0);
  return { groups, a, leaves, lines, outcomes, errors };
}

const admittedIn =
  (...ids: string[]) =>
  async (chatId: string) =>
    ids.includes(chatId);

describe("GROUP_UNADMITTED=leave where a leave takes other chats too", () => {
  it("leaves when none of the other chats is admitted, or there are none; not without a way to judge them", async () => {
    const s = setup(async (chatId) => (chatId === "-1" ? ["-2", "-3"] : []));
    await s.groups.refused(s.a.group("-1", "9", "x"), s.a, { leave: true, addressed: true, policy: "pairing", admitted: admittedIn("-7") });
    await s.groups.refused(s.a.group("-4", "9", "x"), s.a, { leave: true, addressed: true, policy: "pairing", admitted: admittedIn() });
    expect(s.leaves).toEqual(["-1", "-4"]);
    const t = setup(async () => ["-2"]);
    await t.groups.refused(t.a.group("-1", "9", "x"), t.a, { leave: true, addressed: true, policy: "pairing" });
    expect(t.leaves).toEqual([]);
    expect(await t.outcomes()).toEqual({ silent: 1 });
  });

  it("stays silent while another chat is admitted, logs that once, and leaves once it is not", async () => {
    const s = setup(async () => ["-2", "-3"]);
    let admitted = ["-3"];
    const refuse = () =>
      s.groups.refused(s.a.group("-1", "9", "x"), s.a, { leave: true, addressed: true, policy: "pairing", admitted: async (id) => admitted.includes(id) });
    await refuse();
    await refuse();
    expect(s.leaves).toEqual([]);
    expect(await s.outcomes()).toEqual({ silent: 2 });
    expect(s.lines.filter((l) => l.includes("would also leave telegram:-3, which is admitted"))).toHaveLength(1);
    admitted = [];
    await refuse();
    expect(s.leaves).toEqual(["-1"]);
    expect(await s.outcomes()).toEqual({ silent: 2, left: 1 });
  });

  it("stays silent when the adapter cannot tell what a leave would take, or the check fails; tries again at the next addressed message", async () => {
    let answer: () => Promise<string[] | undefined> = async () => undefined;
    const s = setup(() => answer());
    const refuse = () => s.groups.refused(s.a.group("-1", "9", "x"), s.a, { leave: true, addressed: true, policy: "pairing", admitted: admittedIn() });
    await refuse();
    answer = async () => {
      throw new Error("cache gone");
    };
    await refuse();
    expect(s.leaves).toEqual([]);
    expect(await s.outcomes()).toEqual({ silent: 2 });
    expect(await s.errors()).toBe(1);
    expect(s.lines.filter((l) => l.includes("which ones is not known yet"))).toHaveLength(1);
    answer = async () => ["-2"];
    await refuse();
    expect(s.leaves).toEqual(["-1"]);
  });

  it("a leave of one chat alone (no leaveTakesAlso) is made as before", async () => {
    const s = setup(undefined);
    await s.groups.refused(s.a.group("-1", "9", "x"), s.a, { leave: true, addressed: true, policy: "pairing" });
    expect(s.leaves).toEqual(["-1"]);
  });
});
