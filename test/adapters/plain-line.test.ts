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
const word = fc.array(fc.constantFrom(...LETTERS, ..."0123456789"), { minLength: 1, maxLength: 6 }).map((w) => w.join(""));
/** Plain text, with words joined by an underscore here and there (snake_case). */
const plainLine = fc
  .tuple(
    fc.constantFrom(...LETTERS),
    fc.array(
      fc.oneof(
        fc.constantFrom(...PLAIN_TAIL),
        word.map((w) => `${w}_${w}`),
      ),
      { maxLength: 40 },
    ),
  )
  .map(([first, rest]) => first + rest.join(""));
/** Anything near it: markup characters, underscores at a word's edge, line breaks. */
const nearPlain = fc.array(fc.constantFrom(...PLAIN_TAIL, ..."_*~`[]<>&\\|#/@\n", "www.", "1. ", "- ", "__"), { maxLength: 40 }).map((parts) => parts.join(""));

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

  it("whatever it lets through writes what the full render writes (property, markup characters mixed in)", () => {
    let taken = 0;
    fc.assert(
      fc.property(nearPlain, (md) => {
        if (!isPlainLine(md)) return;
        taken++;
        for (const [, d] of DIALECTS) expect(renderMarkdown(md, d)).toBe(renderParsed(md, d));
      }),
      { numRuns: 5000 },
    );
    expect(taken).toBeGreaterThan(50);
  });

  it("the echo agent's answers and ordinary sentences take it", () => {
    for (const md of [
      "echo: m sb-u0-12",
      "echo: m switchboard_echo-u0-12",
      "call read_file on it",
      "Sure, I can help with that. What's the file called?",
      "Done (3 items): ok!",
    ]) {
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
      "_leading underscore",
      "trailing underscore_",
      "an _emphasis_ here",
      "a __strong__ word",
      "word_ underscore",
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
