/**
 * Per-platform rendering of the agent's Markdown (adapters/<platform>/format.ts),
 * over a corpus of 49 samples: each is rendered and split for Telegram, Slack
 * and Discord and checked against the platform fakes' parsers (Telegram's
 * parse_mode HTML, Slack's mrkdwn view) and, for Discord, its length and
 * fences. Nothing a reader should see is lost, on any platform, whole or
 * split small.
 */
import fc from "fast-check";
import { marked } from "marked";
import { describe, expect, it } from "vitest";
import { discordFormat, neutralizeDiscordMentions, renderDiscordMarkdown } from "../../adapters/discord/format.js";
import { renderSlackMrkdwn, slackFormat } from "../../adapters/slack/format.js";
import { escapeTelegramHtml, renderTelegramHtml, telegramFormat, telegramPlainText } from "../../adapters/telegram/format.js";
import { chunkHtml } from "../../src/gateway/format/chunk-html.js";
import { chunkText } from "../../src/gateway/format/chunk-text.js";
import { mrkdwnView } from "../fakes/slack.js";
import { applyParseMode } from "../fakes/telegram.js";
import { CORPUS } from "./format-corpus.js";

/**
 * Telegram's HTML rules, stricter than the fake's parser: only its tags,
 * properly nested; nothing inside code or pre (bar <pre><code class>); code
 * and pre inside no other entity; no link in a link; no quote in a quote;
 * every &, < and > outside a tag written as an entity.
 */
function assertTelegramHtml(html: string): void {
  const stack: string[] = [];
  const tag = /<(\/?)(b|i|s|code|pre|a|blockquote)((?: href="[^"<>]*")|(?: class="language-[A-Za-z0-9_+#.-]+"))?>/y;
  const entity = /&(amp|lt|gt|quot);/y;
  for (let i = 0; i < html.length; ) {
    const c = html[i];
    if (c === "<") {
      tag.lastIndex = i;
      const m = tag.exec(html);
      if (!m) throw new Error(`unexpected "<" at ${i}: ${JSON.stringify(html.slice(i, i + 30))}`);
      const [whole, slash, name, attr] = m as unknown as [string, string, string, string | undefined];
      if (slash) {
        if (attr) throw new Error(`attribute on closing tag at ${i}`);
        if (stack.pop() !== name) throw new Error(`mismatched </${name}> at ${i}`);
      } else {
        const top = stack.at(-1);
        if (attr?.startsWith(" href") && name !== "a") throw new Error(`href on <${name}>`);
        if (attr?.startsWith(" class") && !(name === "code" && top === "pre")) throw new Error(`class on <${name}> outside pre`);
        if (name === "a" && !attr) throw new Error("<a> without href");
        if (top === "code" || (top === "pre" && name !== "code")) throw new Error(`<${name}> inside <${top}>`);
        if ((name === "code" || name === "pre") && stack.some((t) => t !== "pre")) throw new Error(`<${name}> inside ${stack.join(">")}`);
        if (name === "pre" && stack.length > 0) throw new Error("nested <pre>");
        if (name === "a" && stack.includes("a")) throw new Error("nested <a>");
        if (name === "blockquote" && stack.length > 0) throw new Error(`<blockquote> inside ${stack.join(">")}`);
        stack.push(name);
      }
      i += whole.length;
    } else if (c === "&") {
      entity.lastIndex = i;
      const m = entity.exec(html);
      if (!m) throw new Error(`bare "&" at ${i}`);
      i += m[0].length;
    } else if (c === ">") {
      throw new Error(`bare ">" at ${i}`);
    } else i++;
  }
  if (stack.length > 0) throw new Error(`unclosed ${stack.join(",")}`);
}

const words = (s: string): string[] => s.normalize("NFC").match(/[\p{L}\p{N}]+/gu) ?? [];
/** Letters and digits only: what survives any split, even one inside a long word. */
const letters = (s: string): string => words(s).join("");

/** What a reader sees of a Discord message: markers, fences, quote bars and escapes removed. */
function discordShown(s: string): string {
  return s
    .replace(/\u200b/g, "")
    .replace(/^```.*$/gm, "")
    .replace(/^(> )+/gm, "")
    .replace(/^#{1,3} /gm, "")
    .replace(/\[([^\]]*)\]\((?:[^()\s]|\([^()\s]*\))+\)/g, "$1")
    .replace(/\\([\\*_~`|[\]>#+.-])/g, "$1");
}

/** The words CommonMark itself would show (marked's own HTML, tags dropped). */
function referenceWords(md: string): string[] {
  const html = marked.parse(md.replace(/\r\n?/g, "\n"), { async: false, gfm: true }) as string;
  const text = html
    .replace(/<[^>]*>/g, " ")
    .replace(
      /&(#x[0-9a-f]+|#\d+|\w+);/gi,
      (_m, e: string) =>
        ({ amp: "&", lt: "<", gt: ">", quot: '"' })[e] ??
        (e.startsWith("#") ? String.fromCodePoint(e[1] === "x" ? parseInt(e.slice(2), 16) : Number(e.slice(1))) : ""),
    );
  return words(text);
}

/** Whether `sub` appears in `all` in order (extra words, such as list numbers, are allowed). */
function inOrder(sub: string[], all: string[]): boolean {
  let j = 0;
  for (const w of all) if (j < sub.length && w === sub[j]) j++;
  return j === sub.length;
}

function telegramShown(chunks: string[]): string {
  return chunks
    .map((c) => {
      assertTelegramHtml(c);
      expect(c.length).toBeLessThanOrEqual(4096);
      return applyParseMode(c, "HTML").text; // throws "can't parse entities" as Telegram would
    })
    .join("\n");
}

function slackShown(chunks: string[]): string {
  return chunks
    .map((c) => {
      const v = mrkdwnView(c);
      expect(v.problems).toEqual([]);
      expect(c.length).toBeLessThanOrEqual(3500);
      return v.shown;
    })
    .join("\n");
}

function discordChecked(chunks: string[], limit = 2000): string {
  return chunks
    .map((c) => {
      expect(c.length).toBeLessThanOrEqual(limit);
      expect((c.match(/^```/gm) ?? []).length % 2).toBe(0); // every fence closed within its chunk
      expect(c).not.toMatch(/@everyone|@here|<@&/i);
      return discordShown(c);
    })
    .join("\n");
}

describe("the Markdown corpus on every platform", () => {
  it("has at least 40 samples", () => {
    expect(CORPUS.length).toBeGreaterThanOrEqual(40);
  });

  describe.each(CORPUS)("$name", ({ md }) => {
    const reference = referenceWords(md);

    it("Telegram: valid HTML for the fake's parse_mode parser; every word shown, in order", () => {
      const shown = telegramShown(telegramFormat.chunks(md));
      expect(inOrder(reference, words(shown))).toBe(true);
    });

    it("Slack: mrkdwn with nothing Slack would misread; every word shown, in order", () => {
      const shown = slackShown(slackFormat.chunks(md));
      expect(inOrder(reference, words(shown))).toBe(true);
      // The same words as on Telegram.
      expect(words(shown)).toEqual(words(telegramShown(telegramFormat.chunks(md))));
    });

    it("Discord: within 2000, fences closed, mentions defused; every word shown, in order", () => {
      const shown = discordChecked(discordFormat.chunks(md));
      expect(inOrder(reference, words(shown))).toBe(true);
    });

    it("split small, every chunk still parses and nothing is lost", () => {
      const tg = renderTelegramHtml(md);
      const tgSmall = chunkHtml(tg, 160);
      expect(letters(telegramShown(tgSmall))).toBe(letters(applyParseMode(tg, "HTML").text));
      const sl = renderSlackMrkdwn(md);
      expect(letters(slackShown(chunkText(sl, 80)))).toBe(letters(mrkdwnView(sl).shown));
      const dc = renderDiscordMarkdown(md);
      expect(letters(discordChecked(chunkText(dc, 80), 80))).toBe(letters(discordShown(dc)));
    });
  });
});

describe("Telegram HTML", () => {
  const cases: [string, string][] = [
    ["plain <b>not bold</b> & co", "plain &lt;b&gt;not bold&lt;/b&gt; &amp; co"],
    ["**bold** and *it* and _it_", "<b>bold</b> and <i>it</i> and <i>it</i>"],
    ["~~gone~~", "<s>gone</s>"],
    ["use `a<b>` here", "use <code>a&lt;b&gt;</code> here"],
    ["``has ` tick``", "<code>has ` tick</code>"],
    ["a * b * c", "a * b * c"],
    ["\\*literal\\*", "*literal*"],
    ["[docs](https://x.test/a?b=1&c=2)", '<a href="https://x.test/a?b=1&amp;c=2">docs</a>'],
    ["[**bold** link](https://x.test)", '<a href="https://x.test"><b>bold</b> link</a>'],
    ["[bad](javascript:alert(1))", "bad"],
    ["[`code` in link](https://x.test)", '<a href="https://x.test">code in link</a>'],
    ["**bold `code` bold**", "<b>bold </b><code>code</code><b> bold</b>"],
    ["**`only code`**", "<code>only code</code>"],
    ["# Title ##", "<b>Title</b>"],
    ["## *Sub* title", "<b><i>Sub</i> title</b>"],
    ["```ts\nconst a = x < y && z;\n```", '<pre><code class="language-ts">const a = x &lt; y &amp;&amp; z;</code></pre>'],
    ['```"><script>\nx\n```', "<pre>x</pre>"],
    ["~~~\nplain\n~~~", "<pre>plain</pre>"],
    ["para one\n\npara **two**\nline", "para one\n\npara <b>two</b>\nline"],
    ["```\nunclosed <fence>", "<pre>unclosed &lt;fence&gt;</pre>"],
    ["- a\n  - b\n- c", "• a\n   ◦ b\n• c"],
    ["> quote **x**", "<blockquote>quote <b>x</b></blockquote>"],
    ["| a | b |\n|---|---|\n| 1 | 2 |", "<pre>a | b\n--+--\n1 | 2</pre>"],
  ];
  it.each(cases)("%j", (md, html) => {
    expect(renderTelegramHtml(md)).toBe(html);
    assertTelegramHtml(html);
  });

  it("escapes for HTML, quotes included (safe inside an attribute); plain text decodes it back", () => {
    expect(escapeTelegramHtml(`a < b && c > "d"`)).toBe("a &lt; b &amp;&amp; c &gt; &quot;d&quot;");
    expect(telegramPlainText('<b>a &lt; b</b> <a href="https://x.test">&amp; &#169;</a>')).toBe("a < b & ©");
  });

  const markdownish = fc.string({
    unit: fc.constantFrom(
      "*",
      "**",
      "_",
      "__",
      "~~",
      "`",
      "```",
      "[",
      "]",
      "(",
      ")",
      "](",
      "](https://x.test/",
      "](javascript:",
      "\\",
      "<",
      ">",
      "&",
      '"',
      "&amp;",
      "<b>",
      "</i>",
      "\n",
      "\n\n",
      "\n```ts\n",
      "\n~~~\n",
      "# ",
      "- ",
      "1. ",
      "> ",
      "| a |",
      "\n|---|\n",
      " ",
      "a",
      "b",
      "Z",
      "1",
      ".",
      "😀",
      "é",
    ),
    maxLength: 120,
  });

  it("always renders and splits into valid Telegram HTML (property)", () => {
    fc.assert(
      fc.property(markdownish, fc.integer({ min: 200, max: 600 }), (md, limit) => {
        const html = renderTelegramHtml(md);
        assertTelegramHtml(html);
        for (const c of chunkHtml(html, limit)) {
          expect(c.length).toBeLessThanOrEqual(limit);
          assertTelegramHtml(c);
          applyParseMode(c, "HTML");
        }
      }),
      { numRuns: 1500 },
    );
  });

  it("never lets a raw < through from arbitrary text (property)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 200 }), (s) => {
        const html = renderTelegramHtml(s);
        assertTelegramHtml(html);
        expect(html.replace(/<\/?(b|i|s|code|pre|a|blockquote)( href="[^"<>]*"| class="language-[\w+#.-]+")?>/g, "")).not.toContain("<");
      }),
      { numRuns: 1000 },
    );
  });
});

describe("Slack mrkdwn", () => {
  const cases: [string, string][] = [
    ["**bold** and *it* and ~~gone~~", "*bold* and _it_ and ~gone~"],
    ["[the docs](https://x.test/a?b=1&c=2)", "<https://x.test/a?b=1&amp;c=2|the docs>"],
    ["# Heading", "*Heading*"],
    ["- a\n  - b", "• a\n    ◦ b"],
    ["> quoted\n> text", "> quoted\n> text"],
    ["```js\nx < y\n```", "```\nx &lt; y\n```"],
    ["<!channel> & <@U123>", "&lt;!channel&gt; &amp; &lt;@U123&gt;"],
    ["2 * 3 * 4 and \\*not bold\\*", "2 \u2217 3 \u2217 4 and \u2217not bold\u2217"],
    ["snake_case_name and _edge", "snake_case_name and \uff3fedge"],
  ];
  it.each(cases)("%j", (md, out) => {
    expect(renderSlackMrkdwn(md)).toBe(out);
    expect(mrkdwnView(out).problems).toEqual([]);
  });

  it("the fake's mrkdwn check names what Slack would misread", () => {
    expect(mrkdwnView("<!channel> hi").problems.join()).toMatch(/notifies everyone/);
    expect(mrkdwnView("a < b").problems.join()).toMatch(/unescaped "<"/);
    expect(mrkdwnView("a & b").problems.join()).toMatch(/unescaped "&"/);
    expect(mrkdwnView("*bold* <https://x.test|link> &amp;").shown).toBe("bold link &");
  });
});

describe("Discord markdown", () => {
  const cases: [string, string][] = [
    ["**bold** *it* ~~gone~~ `code`", "**bold** *it* ~~gone~~ `code`"],
    ["#### deep heading", "**deep heading**"],
    ["- a\n  - b\n1. c", "- a\n  - b\n\n1. c"],
    ["2 * 3 * 4, snake_case", "2 \\* 3 \\* 4, snake\\_case"],
    ["| a | b |\n|---|---|\n| 1 | 2 |", "```\na | b\n--+--\n1 | 2\n```"],
  ];
  it.each(cases)("%j", (md, out) => {
    expect(renderDiscordMarkdown(md)).toBe(out);
  });

  it("defuses @everyone, @here and role mentions but keeps user mentions", () => {
    const out = neutralizeDiscordMentions("hi @everyone and @Here, <@&123> and <@456>");
    expect(out).not.toMatch(/@everyone|@here|<@&/i);
    expect(out.replaceAll("\u200b", "")).toBe("hi @everyone and @Here, <@&123> and <@456>");
    expect(out).toContain("<@456>");
  });

  it("measures a chunk after defusing mentions: 2,000 characters with @everyone never grow past the limit", () => {
    const md = `@everyone ${"x".repeat(1990)}`;
    expect(md.length).toBe(2000);
    const chunks = discordFormat.chunks(md);
    expect(chunks.every((c) => c.length <= 2000)).toBe(true);
    expect(letters(chunks.join(""))).toBe(letters(md));
  });
});
