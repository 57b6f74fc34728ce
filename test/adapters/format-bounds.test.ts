import { describe, expect, it } from "vitest";
import { DISCORD_MAX_CONTENT, discordDialect, discordFormat } from "../../adapters/discord/format.js";
import { EMAIL_SCANS_REMOVED, INLINE_WORK_BUDGET, limitNesting, MAX_NESTING, type RenderStats } from "../../adapters/shared/markdown-bounds.js";
import { type Dialect, renderMarkdown } from "../../adapters/shared/markdown.js";
import { SLACK_MAX_TEXT, slackDialect, slackFormat } from "../../adapters/slack/format.js";
import { TELEGRAM_MAX_TEXT, telegramDialect, telegramFormat, telegramPlainText } from "../../adapters/telegram/format.js";
import type { ReplyFormat } from "../../adapters/types.js";
import { PATHOLOGICAL } from "./format-corpus.js";

const PLATFORMS: Array<{ name: string; format: ReplyFormat; dialect: Dialect; limit: number; shown: (c: string) => string }> = [
  { name: "telegram", format: telegramFormat, dialect: telegramDialect, limit: TELEGRAM_MAX_TEXT, shown: telegramPlainText },
  { name: "discord", format: discordFormat, dialect: discordDialect, limit: DISCORD_MAX_CONTENT, shown: (c) => c },
  {
    name: "slack",
    format: slackFormat,
    dialect: slackDialect,
    limit: SLACK_MAX_TEXT,
    shown: (c) => c.replace(/&gt;/g, ">").replace(/&lt;/g, "<").replace(/&amp;/g, "&"),
  },
];

const stats = (): RenderStats => ({ inlineWork: 0, cutLines: 0 });

/**
 * What rendering may cost is bounded (issue 26, item 7). The bound is shown
 * by counting work, never by timing: the characters the inline scans may
 * read stay under a fixed budget plus a constant per input character, so
 * doubling the input does not quadruple the work. (Wall time on a quiet
 * machine: every input below renders in under 50 ms; see the report.)
 */
describe("rendering pathological Markdown is bounded and loses nothing", () => {
  it("marked's e-mail scans are out of the lexer's rules (an upgrade that changes them fails here)", () => {
    expect(EMAIL_SCANS_REMOVED).toBe(true);
  });

  for (const p of PLATFORMS)
    for (const { name, md } of PATHOLOGICAL)
      it(`${p.name}: ${name} renders within the limit, without throwing`, () => {
        const chunks = p.format.chunks(md);
        expect(chunks.length).toBeGreaterThan(0);
        for (const c of chunks) expect(c.length).toBeLessThanOrEqual(p.limit);
      });

  for (const { name, md } of PATHOLOGICAL)
    it(`${name}: the inline scans stay within the budget, and twice the input is not four times the work`, () => {
      const once = stats();
      const twice = stats();
      renderMarkdown(md, slackDialect, once);
      renderMarkdown(md + md, slackDialect, twice);
      expect(once.inlineWork).toBeLessThanOrEqual(INLINE_WORK_BUDGET + 21 * md.length);
      expect(twice.inlineWork).toBeLessThanOrEqual(INLINE_WORK_BUDGET + 21 * 2 * md.length);
      expect(twice.inlineWork).toBeLessThan(2.5 * Math.max(once.inlineWork, md.length));
    });

  it("4,000 nested quotes are cut to the cap; the levels past it are shown as typed", () => {
    const st = stats();
    const cut = limitNesting(`${">".repeat(4000)} hi`, st);
    expect(st.cutLines).toBe(1);
    expect(cut).toBe(`${">".repeat(MAX_NESTING)}\\${">".repeat(4000 - MAX_NESTING)} hi`);
    for (const p of PLATFORMS) {
      const shown = p.format
        .chunks(`${">".repeat(4000)} hi`)
        .map(p.shown)
        .join("\n");
      expect(shown).toMatch(/\shi$/);
      expect(shown.split(">").length - 1).toBeGreaterThanOrEqual(4000 - MAX_NESTING);
    }
  });

  it("deep list items join the deepest level kept; every item is still there", () => {
    const md = PATHOLOGICAL.find((p) => p.name === "lists nested by indentation")!.md;
    for (const p of PLATFORMS) {
      const shown = p.format.chunks(md).map(p.shown).join("\n");
      for (const i of [0, 11, 12, 150, 299]) expect(shown).toMatch(new RegExp(`x${i}(?!\\d)`));
      const indents = shown.split("\n").map((l) => /^ */.exec(l)![0].length);
      expect(Math.max(...indents)).toBeLessThanOrEqual(60);
    }
  });

  it("Slack: a long run of escaped characters is never split inside an entity (&gt; in halves shows as text)", () => {
    const chunks = slackFormat.chunks(`${">".repeat(4000)} hi`);
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) expect(c.replace(/&(amp|lt|gt);/g, "")).not.toMatch(/&|^[a-z]*;/);
  });

  it("fenced code and ordinary nesting are left alone", () => {
    const code = `\`\`\`\n${">".repeat(40)} not a quote\n${" ".repeat(60)}- not a list\n\`\`\``;
    expect(limitNesting(code)).toBe(code);
    const nested = "> a\n> > b\n- one\n  - two\n    - three";
    expect(limitNesting(nested)).toBe(nested);
  });

  it("the literal fallback shows the text as written, escaped for each platform", () => {
    const md = "**bold** <b> & <!channel> @everyone";
    expect(telegramFormat.literal(md)).toEqual(["**bold** &lt;b&gt; &amp; &lt;!channel&gt; @everyone"]);
    expect(slackFormat.literal(md)[0]).not.toMatch(/<!|\*\*/);
    expect(discordFormat.literal(md)[0]).toBe("\\*\\*bold\\*\\* <b> & <!channel> @\u200beveryone");
  });
});

describe("notices carry their severity on every platform (issue 26, item 11)", () => {
  const MARKS: Record<string, Record<string, string>> = {
    telegram: { error: "❌ <b>Error:</b> ", warn: "⚠️ <i>Warning:</i> ", success: "✅ " },
    discord: { error: "❌ **Error:** ", warn: "⚠️ *Warning:* ", success: "✅ " },
    slack: { error: ":x: *Error:* ", warn: ":warning: _Warning:_ ", success: ":white_check_mark: " },
  };
  for (const p of PLATFORMS)
    it(`${p.name}: error, warning and success are marked the platform's way; info is plain`, () => {
      const text = "Could not do **that**.";
      const plain = p.format.chunks(text)[0]!;
      for (const sev of ["error", "warn", "success"] as const) expect(p.format.chunks(text, sev)).toEqual([MARKS[p.name]![sev] + plain]);
      expect(p.format.chunks(text, "info")).toEqual([plain]);
      // A notice that opens with a block keeps the block on its own line.
      const [block] = p.format.chunks("```\ncode\n```", "error");
      expect(block!.split("\n")[0]).toBe(MARKS[p.name]!.error!.trimEnd());
    });
});
