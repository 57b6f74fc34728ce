/**
 * Issue 26, item 1, below the conformance suite: what a refused group
 * message leaves behind (nothing answered, nothing replayed after a
 * restart), GROUP_UNADMITTED=leave when leaving fails, the once-per-group
 * log and its bound, a paired stranger's approvals, group grants in the
 * store and the CLI, and the policy's defaults. Real SQLite files and the
 * real app; the platform is the in-process MemoryAdapter.
 */
import { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AdapterError } from "../../adapters/types.js";
import { loadConfig } from "../../src/config.js";
import type { App } from "../../src/gateway/app.js";
import { UnadmittedGroups } from "../../src/gateway/inbound/groups.js";
import { groupPolicy, listedGroup } from "../../src/gateway/inbound/policy.js";
import { GatewayMetrics } from "../../src/gateway/metrics.js";
import { pairingCommand } from "../../src/cli/pairing.js";
import { Output } from "../../src/cli/output.js";
import { createLogger } from "../../src/log.js";
import { AccessStore } from "../../src/store/access.js";
import { FakeOpenAi, toolUsingModel } from "../fakes/openai.js";
import { eventually } from "../support/app.js";
import { startAppOn } from "../support/app-on.js";
import { freshMigratedSqliteUrl, openTestDb } from "../support/db.js";
import { MemoryAdapter } from "../support/memory-adapter.js";

const open: Array<{ stop(): Promise<void> }> = [];
/** Each test's own migrated SQLite file. */
let dbUrl = "";
beforeEach(async () => {
  dbUrl = await freshMigratedSqliteUrl();
});
afterEach(async () => {
  for (const x of open.splice(0).reverse()) await x.stop();
});

function capture(): { log: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write: (c: Buffer, _e, cb) => {
      lines.push(c.toString("utf8"));
      cb();
    },
  });
  const log = createLogger({ level: "info", destination });
  return { log, lines };
}

async function start(url: string, adapter: MemoryAdapter, env: Record<string, string>, log = capture().log, extra = {}): Promise<App> {
  const { app } = await startAppOn(url, [adapter], { DM_POLICY: "pairing", REFLECT_EVERY_TURNS: "0", ...env }, { log, ...extra });
  open.push(app);
  return app;
}

const counted = async (app: App, outcome?: string): Promise<number> =>
  (await app.metrics.groupsUnadmitted.get()).values.filter((v) => !outcome || v.labels.outcome === outcome).reduce((n, v) => n + v.value, 0);
const NOT_ADMITTED = "a message in a group the bot was not admitted to got no answer";

describe("a group the bot was not admitted to", () => {
  it("is never answered, logged once, and its messages are handled: a restart that admits the group does not replay them", async () => {
    const { log, lines } = capture();
    const a = new MemoryAdapter();
    const app = await start(dbUrl, a, {}, log);
    for (const t of ["hi bot", "/status", "still there?"]) await a.ctx.inbound(a.group("-100200", "666", t, { mentioned: true }));
    await eventually(
      () => counted(app),
      (n) => n >= 3,
      10_000,
      "three refusals",
    );
    expect(a.to("-100200")).toEqual([]);
    expect(lines.filter((l) => l.includes(NOT_ADMITTED))).toHaveLength(1);
    expect(lines.find((l) => l.includes(NOT_ADMITTED))).toContain("telegram:-100200 to ALLOW_GROUPS");
    await app.stop();
    open.length = 0;

    const b = new MemoryAdapter();
    const again = await start(dbUrl, b, { ALLOW_GROUPS: "telegram:-100200" });
    await b.ctx.inbound(b.group("-100200", "666", "a new message", { mentioned: true }));
    // Recovered work goes out before anything new in a chat: once this is answered, nothing older is coming.
    await eventually(
      () => b.to("-100200").map((s) => s.text),
      (t) => t.includes("echo: a new message"),
      10_000,
      "the new message answered",
    );
    expect(b.to("-100200").map((s) => s.text)).toEqual(["echo: a new message"]);
    expect(await counted(again)).toBe(0);
  });

  it("GROUP_UNADMITTED=leave: leaves when addressed (not for chatter, nor for an admin); a failed leave is counted and tried again", async () => {
    const a = new MemoryAdapter();
    const leaves: string[] = [];
    let failures = 1;
    a.sink.leave = async (chatId) => {
      leaves.push(chatId);
      if (failures-- > 0) throw new AdapterError("telegram", "Rejected", "Forbidden: not enough rights");
    };
    const { log, lines } = capture();
    const app = await start(dbUrl, a, { GROUP_UNADMITTED: "leave", ADMIN_USERS: "telegram:42" }, log);
    await a.ctx.inbound(a.group("-1", "666", "just chatting"));
    await a.ctx.inbound(a.group("-1", "42", "hello bot, admin here", { mentioned: true }));
    await eventually(
      () => counted(app, "silent"),
      (n) => n >= 2,
      10_000,
      "the unaddressed and the admin's message refused",
    );
    expect(leaves).toEqual([]);
    await a.ctx.inbound(a.group("-1", "666", "hey bot", { mentioned: true }));
    await eventually(
      () => counted(app, "leave-failed"),
      (n) => n >= 1,
      10_000,
      "the failed leave counted",
    );
    expect(lines.some((l) => l.includes("could not leave a group"))).toBe(true);
    expect(await app.metrics.internalErrors.get().then((m) => m.values.find((v) => v.labels.where === "telegram:group-leave")?.value)).toBe(1);
    await a.ctx.inbound(a.group("-1", "666", "hey bot?", { mentioned: true }));
    await eventually(
      () => counted(app, "left"),
      (n) => n >= 1,
      10_000,
      "the second try left",
    );
    await a.ctx.inbound(a.group("-1", "666", "/help"));
    await eventually(
      () => counted(app, "silent"),
      (n) => n >= 3,
      10_000,
      "a late message after leaving refused",
    );
    expect(leaves).toEqual(["-1", "-1"]);
    expect(a.to("-1")).toEqual([]);
    expect(lines.filter((l) => l.includes(NOT_ADMITTED))).toHaveLength(1);
  });

  it("an admin's /allowgroup gets through and admits it durably; another sender's does not", async () => {
    const a = new MemoryAdapter();
    const app = await start(dbUrl, a, { ADMIN_USERS: "telegram:42" });
    await a.ctx.inbound(a.group("-7", "666", "/allowgroup"));
    await eventually(
      () => counted(app),
      (n) => n >= 1,
      10_000,
      "the stranger's /allowgroup refused",
    );
    await a.ctx.inbound(a.group("-7", "42", "/allowgroup@membot"));
    await eventually(
      () => a.to("-7").map((s) => s.text),
      (t) => t.some((x) => /This group is admitted/.test(x)),
      10_000,
      "the admission",
    );
    expect(a.to("-7")).toHaveLength(1);
    await app.stop();
    open.length = 0;
    const b = new MemoryAdapter();
    await start(dbUrl, b, {});
    await b.ctx.inbound(b.group("-7", "666", "after a restart", { mentioned: true, chatKind: "thread", threadId: "5" }));
    await eventually(
      () => b.to("-7").map((s) => s.text),
      (t) => t.includes("echo: after a restart"),
      10_000,
      "the admitted group's thread answered",
    );
  });
});

describe("approving in a group takes passing the DM policy", () => {
  it("a stranger's typed /approve of their own call is refused; once paired, the same sender's counts", async () => {
    const model = await FakeOpenAi.start();
    open.push({ stop: () => model.close() });
    model.responder = toolUsingModel({ trigger: "use the clock", tool: "current_time", args: "{}" });
    const a = new MemoryAdapter();
    const app = await start(dbUrl, a, { GROUP_POLICY: "open", OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "m" }, undefined, {
      mcpConfig: { servers: [], builtinTools: { current_time: { policy: "ask" } } },
    });
    await a.ctx.inbound(a.group("-9", "666", "use the clock", { mentioned: true }));
    const card = await eventually(() => a.to("-9").find((s) => /Reply \/approve/.test(s.text)), Boolean, 15_000, "the text card");
    const id = /\/approve (\S+)/.exec(card!.text)![1]!;
    await a.ctx.inbound(a.group("-9", "666", `/approve ${id}`));
    await eventually(
      () => a.to("-9").map((s) => s.text),
      (t) => t.some((x) => /Only someone this bot already talks to/.test(x)),
      10_000,
      "the refusal",
    );
    expect(a.to("-9").some((s) => s.text.includes("the tool said"))).toBe(false);
    await new AccessStore(app.db).grant("telegram", a.botId, "666", "test");
    await a.ctx.inbound(a.group("-9", "666", `/approve ${id}`));
    await eventually(
      () => a.to("-9").map((s) => s.text),
      (t) => t.some((x) => x.includes("the tool said: UTC:")),
      15_000,
      "the answer",
    );
  });
});

describe("the once-per-group log", () => {
  it("remembers at most 1,000 groups: the oldest is forgotten (and logged again), a recent one is not", async () => {
    const { log, lines } = capture();
    const groups = new UnadmittedGroups({ log, metrics: new GatewayMetrics(), outbound: { enqueue: async () => false } });
    const a = new MemoryAdapter();
    const refuse = (chat: string) => groups.refused(a.group(chat, "1", "x"), a, { leave: false, addressed: true, policy: "pairing" });
    for (let i = 0; i < 1500; i++) await refuse(`-${i}`);
    expect(groups.size).toBe(1000);
    const logged = () => lines.filter((l) => l.includes(NOT_ADMITTED)).length;
    expect(logged()).toBe(1500);
    await refuse("-1499");
    expect(logged()).toBe(1500);
    await refuse("-0");
    expect(logged()).toBe(1501);
    expect(groups.size).toBe(1000);
  });
});

describe("group policy settings", () => {
  it("GROUP_POLICY defaults to open only with DM_POLICY=open, and a bad value names the fix", () => {
    const base = { DATABASE_URL: "file:./x.db" };
    expect(groupPolicy(loadConfig({ ...base, DM_POLICY: "open" }))).toBe("open");
    expect(groupPolicy(loadConfig({ ...base }))).toBe("pairing");
    expect(groupPolicy(loadConfig({ ...base, DM_POLICY: "allowlist", GROUP_POLICY: "" }))).toBe("pairing");
    expect(groupPolicy(loadConfig({ ...base, DM_POLICY: "open", GROUP_POLICY: "allowlist" }))).toBe("allowlist");
    expect(() => loadConfig({ ...base, GROUP_POLICY: "closed" })).toThrow(/GROUP_POLICY must be open, allowlist or pairing/);
    expect(() => loadConfig({ ...base, GROUP_UNADMITTED: "shout" })).toThrow(/GROUP_UNADMITTED/);
  });

  it("ALLOW_GROUPS entries: platform:chatId, * for all, and a Slack channel by its own id", () => {
    expect(listedGroup(["telegram:-100"], { platform: "telegram", chatId: "-100" })).toBe(true);
    expect(listedGroup(["telegram:-100"], { platform: "discord", chatId: "-100" })).toBe(false);
    expect(listedGroup(["telegram:-100"], { platform: "telegram", chatId: "-1000" })).toBe(false);
    expect(listedGroup(["*"], { platform: "slack", chatId: "T1/C1" })).toBe(true);
    expect(listedGroup(["slack:C0123"], { platform: "slack", chatId: "T0TEAM/C0123" })).toBe(true);
    expect(listedGroup(["slack:T0TEAM/C0123"], { platform: "slack", chatId: "T0TEAM/C0123" })).toBe(true);
    expect(listedGroup(["slack:T0TEAM"], { platform: "slack", chatId: "T0TEAM/C0123" })).toBe(false);
  });
});

describe("group grants in the store and the CLI", () => {
  it("admit, list and revoke; a group's grant never admits a sender, nor a sender's a group", async () => {
    const t = await openTestDb("sqlite");
    open.push({ stop: () => t.close() });
    const store = new AccessStore(t.db);
    await store.grant("telegram", "777", "-5", "pairing:X");
    expect(await store.isGroupAdmitted("telegram", "777", "-5")).toBe(false);
    await store.admitGroup("telegram", "777", "-6", "admin:telegram:42");
    await store.admitGroup("telegram", "777", "-6", "admin:telegram:43");
    expect(await store.isGroupAdmitted("telegram", "777", "-6")).toBe(true);
    expect(await store.isGroupAdmitted("telegram", "778", "-6")).toBe(false);
    expect(await store.isGranted("telegram", "777", "-6")).toBe(false);
    const out: string[] = [];
    const io = { out: (l: string) => out.push(l), err: (l: string) => out.push(l) };
    await pairingCommand(t.db, "groups", undefined, new Output(io, true));
    expect(JSON.parse(out.pop()!).groups).toEqual([expect.objectContaining({ platform: "telegram", botId: "777", chatId: "-6", source: "admin:telegram:42" })]);
    await pairingCommand(t.db, "revoke-group", "telegram:-6", new Output(io, false));
    expect(out.pop()).toBe("Revoked telegram:-6: the bot no longer answers there.");
    expect(await store.isGroupAdmitted("telegram", "777", "-6")).toBe(false);
    await expect(pairingCommand(t.db, "revoke-group", "telegram:-6", new Output(io, false))).rejects.toThrow(/No admitted group telegram:-6/);
    await expect(pairingCommand(t.db, "revoke-group", "-6", new Output(io, false))).rejects.toThrow(/platform:chatId/);
  });
});
