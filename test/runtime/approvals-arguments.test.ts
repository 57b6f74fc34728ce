/**
 * Approvers see what they approve (issue 26, item 2): a call's arguments are
 * kept whole and shown whole. The parts split losslessly within a limit; a
 * platform without cards of its own (the text form) gets the parts before
 * the card; arguments too long to show anyone are denied without asking.
 * The platforms' own cards are checked through their SDKs in
 * test/conformance/suite.ts ("long arguments").
 */
import { Marked, type Tokens } from "marked";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleCard } from "../../adapters/console/approval-card.js";
import type { App } from "../../src/gateway/app.js";
import { ARGS_APPROVABLE_MAX, splitArguments, weigh } from "../../src/runtime/approvals/arguments.js";
import { prettyArguments } from "../../src/runtime/approvals/card.js";
import { FakeOpenAi, toolUsingModel } from "../fakes/openai.js";
import { eventually, startApp } from "../support/app.js";
import { MemoryAdapter } from "../support/memory-adapter.js";

const join = (parts: ReturnType<typeof splitArguments>) => parts.map((p, i) => (i === 0 || p.continuesLine ? "" : "\n") + p.text).join("");

describe("splitting arguments", () => {
  it("keeps every character, in order, each part within the room as the platform counts it", () => {
    const text = prettyArguments(JSON.stringify({ a: Array.from({ length: 200 }, (_, i) => `item ${i} <&>`), b: "z".repeat(3_000), c: "😀".repeat(400) }));
    const heavy = (ch: string) => (ch === "&" ? 5 : ch === "<" || ch === ">" ? 4 : ch.length);
    for (const room of [50, 333, 1_000]) {
      const parts = splitArguments(text, room, heavy);
      expect(join(parts)).toBe(text);
      for (const p of parts) expect(weigh(p.text, heavy)).toBeLessThanOrEqual(room);
      // Never half of a surrogate pair at either end of a part.
      for (const p of parts) expect(p.text).not.toMatch(/^[\udc00-\udfff]|[\ud800-\udbff]$/);
      // A whole line ends a part when one ends in its second half: most cuts fall between lines.
      expect(parts.filter((p) => !p.continuesLine).length).toBeGreaterThan(1);
    }
  });

  it("pretty-prints JSON with two-space indentation and keeps other text as sent, never cut", () => {
    expect(prettyArguments('{"a":{"b":[1,2]}}')).toBe('{\n  "a": {\n    "b": [\n      1,\n      2\n    ]\n  }\n}');
    const odd = `not json\n\tindented ${"q".repeat(5_000)}`;
    expect(prettyArguments(odd)).toBe(odd);
  });
});

describe("the console's card", () => {
  it("the page's Markdown shows the arguments exactly, in one code block nothing in them can close, and no name formats the card", () => {
    const args = prettyArguments(
      JSON.stringify({ a: "```` fence ````", b: { "    four": "*not bold* <b>x</b> _u_" }, c: ["# not a heading", "> not a quote"] }),
    );
    const card = consoleCard({ id: "abc234", tool: "current_time", arguments: args, state: "pending", requesterName: "**Mallory** [x](http://evil.example)" });
    // The page's own renderer settings (adapters/console/static/markdown.js).
    const tokens = new Marked({ gfm: true, breaks: true, async: false }).lexer(card.text);
    const code = tokens.filter((t): t is Tokens.Code => t.type === "code");
    expect(code.map((t) => t.text)).toEqual([args]);
    const title = tokens.find((t) => t.type === "paragraph") as Tokens.Paragraph;
    expect(title.tokens?.some((t) => t.type === "strong" || t.type === "link")).toBe(false);
  });
});

describe("approval cards in the text form, and arguments too long to show", () => {
  let app: App;
  let model: FakeOpenAi;
  const LIMIT = 700;
  // A platform without cards of its own, whose messages hold 700 characters.
  const adapter = new MemoryAdapter("778", {
    maxTextLength: LIMIT,
    editIntervalMs: { private: 100, group: 100 },
    perChat: { ratePerSec: 1000, burst: 1000 },
    global: { ratePerSec: 1000, burst: 1000 },
    canEdit: true,
  });
  const long = { note: "n".repeat(1_500), list: Array.from({ length: 30 }, (_, i) => `entry ${i}`), hidden: "SECOND INSTRUCTION" };
  const huge = { note: "h".repeat(ARGS_APPROVABLE_MAX + 10) };

  beforeAll(async () => {
    model = await FakeOpenAi.start();
    const longCall = toolUsingModel({ trigger: "use the long clock", tool: "current_time", args: JSON.stringify(long) });
    const hugeCall = toolUsingModel({ trigger: "use the huge clock", tool: "current_time", args: JSON.stringify(huge) });
    model.responder = (body) => (JSON.stringify(body?.messages ?? []).includes("huge clock") ? hugeCall(body) : longCall(body));
    const r = await startApp(
      "sqlite",
      [adapter],
      { OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "fake-model", APPROVAL_TIMEOUT: "10m" },
      { mcpConfig: { servers: [], builtinTools: { current_time: { policy: "ask" } } } },
    );
    app = r.app;
  });
  afterAll(async () => {
    await app?.stop();
    await model?.close();
  });

  it("posts the arguments in numbered parts within the limit before the card, which points up to them; /approve then runs the call", async () => {
    const pretty = prettyArguments(JSON.stringify(long));
    await adapter.ctx.inbound(adapter.dm("ann", "use the long clock"));
    const sent = await eventually(
      () => adapter.to("ann"),
      (s) => s.some((m) => m.text.startsWith("The agent wants to use the tool")),
      15_000,
      "the card",
    );
    const at = sent.findIndex((m) => m.text.startsWith("The agent wants to use the tool"));
    const card = sent[at]!.text;
    const parts = sent
      .slice(0, at)
      .map((m) => /^Arguments for approval \w+ \(current_time\), part (\d+)\/(\d+)(, continuing the line)?:\n([\s\S]*)$/.exec(m.text));
    expect(parts.length).toBeGreaterThanOrEqual(3);
    for (const [i, m] of parts.entries()) expect([m?.[1], m?.[2]]).toEqual([String(i + 1), String(parts.length)]);
    expect(parts.map((m, i) => (i === 0 || m![3] ? "" : "\n") + m![4]).join("")).toBe(pretty);
    for (const m of sent.slice(0, at + 1)) expect(m.text.length).toBeLessThanOrEqual(LIMIT);
    expect(card).toContain(`The arguments (${pretty.length.toLocaleString("en-US")} characters) are in the ${parts.length} messages above`);
    const id = /\/approve ([a-z0-9]{6})/.exec(card)![1]!;
    const record = await app.tooling.approvals.opts.store.get(id);
    expect(record?.arguments).toBe(pretty);

    await adapter.ctx.inbound(adapter.dm("ann", `/approve ${id}`));
    await eventually(
      () => adapter.edits.filter((e) => e.messageId === sent[at]!.messageId),
      (e) => e.some((x) => /Approved by/.test(x.text)),
      15_000,
      "the card edited to approved",
    );
    const edited = adapter.edits.filter((e) => e.messageId === sent[at]!.messageId).at(-1)!.text;
    expect(edited).toContain(`are in the ${parts.length} messages above`);
    expect(edited.length).toBeLessThanOrEqual(LIMIT);
  });

  it(`denies a call whose arguments are past ${ARGS_APPROVABLE_MAX} characters without showing a card, and says why`, async () => {
    await adapter.ctx.inbound(adapter.dm("bob", "use the huge clock"));
    const reply = await eventually(
      () => adapter.to("bob").find((m) => m.text.includes("the tool said")),
      (m) => m !== undefined,
      15_000,
      "the answer",
    );
    expect(reply!.text).toMatch(/denied by approval policy: current_time was not run \(its arguments are \d+ characters, more than a person can be shown/);
    expect(adapter.to("bob").some((m) => /wants to use the tool|Arguments for approval/.test(m.text))).toBe(false);
    expect(await app.metrics.text()).toMatch(/switchboard_tool_approvals_total\{outcome="too_long"\} 1/);
  });
});
