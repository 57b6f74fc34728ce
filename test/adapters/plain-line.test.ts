import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { discordDialect } from "../../adapters/discord/format.js";
import { isPlainLine, renderMarkdown, renderParsed, type Dialect } from "../../adapters/shared/markdown.js";
import { slackDialect } from "../../adapters/slack/format.js";
import { telegramDialect } from "../../adapters/telegram/format.js";

const DIALECTS: Array<[string, Dialect]> = [
  ["telegram", telegramDialect],
  ["discord", discordDialect],
  ["slack", slackDialect],
];

/** Letters of several scripts, digits, and every punctuation mark the shortcut lets through. */
const LETTERS = [..."abcxyzABCXYZéßøЖжλ中文ñ"];
const PLAIN_TAIL = [...LETTERS, ..."0123456789", ..." ,.:;?!'\"()+=-", "  "];
const plainLine = fc
  .tuple(fc.constantFrom(...LETTERS), fc.array(fc.constantFrom(...PLAIN_TAIL), { maxLength: 80 }))
  .map(([first, rest]) => first + rest.join(""));

/**
 * A plain line (one line of prose no Markdown rule reads as structure) is
 * written by the dialect's escaping alone, without marked's lexer (issue 31:
 * the lexer was most of a short reply's rendering CPU). The shortcut must
 * write exactly what the full render writes, on every platform.
 */
describe("a plain line's shortcut", () => {
  it("writes what the full render writes, on every platform (property)", () => {
    fc.assert(
      fc.property(plainLine, (md) => {
        expect(isPlainLine(md)).toBe(true);
        for (const [, d] of DIALECTS) expect(renderMarkdown(md, d)).toBe(renderParsed(md, d));
      }),
      { numRuns: 2000 },
    );
  });

  it("the echo agent's answers and ordinary sentences take it", () => {
    for (const md of ["echo: m sb-u0-12", "Sure, I can help with that. What's the file called?", "Done (3 items): ok!"]) {
      expect(isPlainLine(md)).toBe(true);
      for (const [, d] of DIALECTS) expect(renderMarkdown(md, d)).toBe(renderParsed(md, d));
    }
  });

  it("anything Markdown could read as structure goes through the lexer", () => {
    const structured = [
      "1. first", // an ordered list starts with a digit
      "- item",
      "+ item",
      "# heading",
      "> quote",
      "    indented code",
      "two\nlines",
      "a *strong* word",
      "snake_case_name",
      "~~gone~~",
      "a `code` span",
      "a [link](https://example.com)",
      "see https://example.com",
      "see www.example.com",
      "mail me@example.com",
      "a <b>tag</b>",
      "fish & chips",
      "a | b",
      "an \\* escape",
      "emoji 🎉",
      " leading space",
    ];
    for (const md of structured) expect(isPlainLine(md), md).toBe(false);
    // And the full render is what they get (a link stays a link).
    expect(renderMarkdown("a [link](https://example.com)", telegramDialect)).toContain("<a href=");
  });
});
