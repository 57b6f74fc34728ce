import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { chunkHtml } from "../../../src/gateway/format/chunk-html.js";
import { chunkText, scanFences } from "../../../src/gateway/format/chunk-text.js";
import { applyParseMode } from "../../fakes/telegram.js";

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const FENCE_LINE = /^[ \t]*(`{3,}|~{3,})/;

/** An independent oracle: true when every fence opened in `chunk` is closed in it. */
function fencesBalanced(chunk: string): boolean {
  let open: string | null = null;
  for (const line of chunk.split("\n")) {
    const m = /^[ \t]*(`{3,}|~{3,})(.*)$/.exec(line);
    if (!m) continue;
    const run = m[1]!;
    if (open === null) open = run;
    else if (run[0] === open[0] && run.length >= open.length && m[2]!.trim() === "") open = null;
  }
  return open === null;
}

/** Non-whitespace content with fence lines removed: what chunking must preserve. */
function content(text: string): string {
  return text
    .split("\n")
    .filter((l) => !FENCE_LINE.test(l))
    .join("")
    .replace(/\s+/g, "");
}

describe("chunkText: basics", () => {
  it("returns [] for empty or blank input", () => {
    expect(chunkText("", 10)).toEqual([]);
    expect(chunkText(" \n\t\n  ", 10)).toEqual([]);
  });

  it("returns short text whole, trimmed of blank edges", () => {
    expect(chunkText("hello", 10)).toEqual(["hello"]);
    expect(chunkText("\n\n  indented\nnext\n\n", 100)).toEqual(["  indented\nnext"]);
  });

  it("rejects a non-positive or fractional limit", () => {
    expect(() => chunkText("abc", 0)).toThrow(RangeError);
    expect(() => chunkText("abc", 2.5)).toThrow(RangeError);
  });

  it("prefers a paragraph break over a later line break", () => {
    const text = "para one line\n\nsecond para a\nsecond para b";
    expect(chunkText(text, 30)).toEqual(["para one line", "second para a\nsecond para b"]);
  });

  it("prefers a line break over a later sentence end", () => {
    const text = "first line\nSentence one. Sentence two goes on";
    expect(chunkText(text, 30)).toEqual(["first line", "Sentence one.", "Sentence two goes on"]);
  });

  it("prefers a sentence end over a later space", () => {
    const text = "One sentence here. And then many more words follow";
    expect(chunkText(text, 30)).toEqual(["One sentence here.", "And then many more words", "follow"]);
  });

  it("splits at spaces and drops the space at the seam", () => {
    expect(chunkText("aaa bbb ccc ddd", 8)).toEqual(["aaa bbb", "ccc ddd"]);
  });

  it("hard-splits only an over-long word", () => {
    expect(chunkText("x abcdefghij y", 4)).toEqual(["x", "abcd", "efgh", "ij y"]);
  });

  it("never splits a surrogate pair or an emoji sequence", () => {
    const chunks = chunkText("😀".repeat(10), 5);
    expect(chunks.every((c) => c.length <= 5 && !LONE_SURROGATE.test(c))).toBe(true);
    expect(chunks.join("")).toBe("😀".repeat(10));
    const family = "👨‍👩‍👧‍👦"; // 11 UTF-16 units, one grapheme
    const fam = chunkText(family.repeat(3), 12);
    expect(fam).toEqual([family, family, family]);
  });

  it("keeps a sentence end after closing markup", () => {
    expect(chunkText("It **worked.** Now more words here", 20)[0]).toBe("It **worked.**");
  });

  it("splits CJK text after a full stop", () => {
    expect(chunkText("今日は晴れです。明日は雨でしょう。", 10)).toEqual(["今日は晴れです。", "明日は雨でしょう。"]);
  });
});

describe("chunkText: code fences", () => {
  it("never splits inside a fence that fits", () => {
    const fence = "```ts\nconst a = 1;\n\nconst b = 2;\n```";
    const text = `Intro text here.\n\n${fence}\n\nOutro.`;
    const chunks = chunkText(text, fence.length + 2);
    expect(chunks).toContain(fence);
    expect(chunks.every(fencesBalanced)).toBe(true);
  });

  it("closes and reopens an oversized fence with its language tag", () => {
    const body = Array.from({ length: 20 }, (_, i) => `  line ${i} = compute(${i});`).join("\n");
    const text = `Here:\n\n\`\`\`python\n${body}\n\`\`\`\n\nDone.`;
    const chunks = chunkText(text, 120);
    expect(chunks.length).toBeGreaterThan(3);
    for (const c of chunks) {
      expect(c.length).toBeLessThanOrEqual(120);
      expect(fencesBalanced(c)).toBe(true);
    }
    const code = chunks.filter((c) => c.includes("compute"));
    for (const c of code) expect(c.startsWith("```python\n")).toBe(true);
    // Indentation inside code is kept.
    expect(code[1]!.split("\n")[1]).toMatch(/^ {2}line \d+/);
    expect(content(chunks.join("\n"))).toBe(content(text));
  });

  it("handles ~~~ fences and ``` lines inside them", () => {
    const body = Array.from({ length: 12 }, (_, i) => (i === 5 ? "```" : `echo ${i} and more`)).join("\n");
    const text = `~~~sh\n${body}\n~~~`;
    const chunks = chunkText(text, 60);
    for (const c of chunks) {
      expect(c.startsWith("~~~sh\n")).toBe(true);
      expect(c.endsWith("\n~~~")).toBe(true);
      expect(c.length).toBeLessThanOrEqual(60);
    }
  });

  it("closes a dangling fence when it has to split", () => {
    const text = `Start\n\`\`\`js\n${Array.from({ length: 10 }, (_, i) => `f(${i});`).join("\n")}`;
    const chunks = chunkText(text, 30);
    expect(chunks.every(fencesBalanced)).toBe(true);
    expect(content(chunks.join("\n"))).toBe(content(text));
  });

  it("finds fences as CommonMark does", () => {
    const fences = scanFences("a\n```ts\nx\n~~~\n````\nb\n~~~\n");
    expect(fences).toHaveLength(2);
    expect(fences[0]).toMatchObject({ lang: "ts", marker: "```", closed: true });
    expect(fences[1]).toMatchObject({ marker: "~~~", closed: false });
    expect(scanFences("```not`a fence\nx")).toEqual([]);
  });

  it("stays linear on large, boundary-poor input", () => {
    const big = `${"x".repeat(200_000)}\n\`\`\`\n${"y ".repeat(200_000)}\n\`\`\`\n${"z. ".repeat(100_000)}`;
    const chunks = chunkText(big, 4096);
    expect(chunks.every((c) => c.length <= 4096 && fencesBalanced(c))).toBe(true);
    expect(content(chunks.join("\n"))).toBe(content(big));
  });
});

// Words never start with a fence character, so a mid-line split can't forge a fence line.
const word = fc.oneof(
  { weight: 6, arbitrary: fc.stringMatching(/^[a-z0-9]{1,12}$/) },
  { weight: 1, arbitrary: fc.constantFrom("😀", "👍🏽", "🇺🇦", "naïve", "日本語", "**bold**", "_it_", "a😀b", "x.y") },
  { weight: 1, arbitrary: fc.stringMatching(/^[a-z😀]{20,80}$/u) },
);
const sentence = fc.tuple(fc.array(word, { minLength: 1, maxLength: 12 }), fc.constantFrom(".", "!", "?", "", ".)")).map(([ws, end]) => ws.join(" ") + end);
const line = fc.array(sentence, { minLength: 1, maxLength: 4 }).map((s) => s.join(" "));
const paragraph = fc.array(line, { minLength: 1, maxLength: 5 }).map((ls) => ls.join("\n"));
const codeLine = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(fc.constantFrom("", "  ", "    ", "\t"), fc.array(word, { maxLength: 8 })).map(([i, ws]) => i + ws.join(" ")) },
  { weight: 1, arbitrary: fc.constant("") },
  { weight: 1, arbitrary: fc.constantFrom("~~~", "```") },
);
const fence = fc
  .tuple(fc.constantFrom("```", "~~~", "````"), fc.constantFrom("", "ts", "python"), fc.array(codeLine, { maxLength: 30 }))
  .map(([m, lang, lines]) => {
    // A line of the fence's own kind would close it early; keep only the other kind.
    const body = lines.filter((l) => !(l.length > 0 && l[0] === m[0]));
    return [m + lang, ...body, m].join("\n");
  });
const doc = fc
  .tuple(
    fc.array(fc.oneof({ weight: 3, arbitrary: paragraph }, { weight: 1, arbitrary: fence }), { minLength: 1, maxLength: 8 }),
    fc.constantFrom("\n\n", "\n", "\n\n\n"),
    fc.boolean(),
  )
  .map(([blocks, sep, dangling]) => blocks.join(sep) + (dangling ? "\n```ts\nconst dangling = 1;\nmore()" : ""));

describe("chunkText: properties", () => {
  it("every chunk fits, content is kept in order, fences balance, no lone surrogates", () => {
    fc.assert(
      fc.property(doc, fc.integer({ min: 24, max: 400 }), (text, limit) => {
        const chunks = chunkText(text, limit);
        expect(chunkText(text, limit)).toEqual(chunks);
        for (const c of chunks) {
          expect(c.length).toBeLessThanOrEqual(limit);
          expect(c.trim()).not.toBe("");
          expect(LONE_SURROGATE.test(c)).toBe(false);
          if (chunks.length > 1) expect(fencesBalanced(c)).toBe(true);
        }
        expect(content(chunks.join("\n"))).toBe(content(text));
        if (text.trim().length <= limit) expect(chunks).toHaveLength(1);
      }),
      { numRuns: 400 },
    );
  });

  it("never produces lone surrogates from arbitrary unicode", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 300 }), fc.integer({ min: 12, max: 60 }), (text, limit) => {
        for (const c of chunkText(text, limit)) {
          expect(c.length).toBeLessThanOrEqual(limit);
          expect(LONE_SURROGATE.test(c)).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("chunkHtml: rendered Telegram HTML", () => {
  const visible = (html: string) => applyParseMode(html, "HTML").text.replace(/\s+/g, "");

  it("never splits inside a tag or an entity; tags open at a split are closed and reopened as written", () => {
    const html = `<b>${"bold &amp; words ".repeat(10)}</b> then <a href="https://x.test/?a=1&amp;b=2">a link label here</a>`;
    const chunks = chunkHtml(html, 60);
    expect(chunks.length).toBeGreaterThan(2);
    for (const c of chunks) {
      expect(c.length).toBeLessThanOrEqual(60);
      applyParseMode(c, "HTML"); // throws on a broken tag or entity
      expect(c).not.toMatch(/&[a-z#0-9]*$|<[^>]*$/); // nothing cut at the end
    }
    expect(chunks[0]).toMatch(/^<b>.*<\/b>$/);
    expect(chunks[1]).toMatch(/^<b>/);
    expect(chunks.join("")).toContain('<a href="https://x.test/?a=1&amp;b=2">');
    expect(chunks.map(visible).join("")).toBe(visible(html));
  });

  it("splits a code block at line ends, reopening <pre><code class> on each piece", () => {
    const code = Array.from({ length: 30 }, (_, i) => `line ${i} &lt; x`).join("\n");
    const chunks = chunkHtml(`<pre><code class="language-js">${code}</code></pre>`, 100);
    for (const c of chunks) {
      expect(c).toMatch(/^<pre><code class="language-js">line \d+ &lt; x(\nline \d+ &lt; x)*<\/code><\/pre>$/);
      expect(applyParseMode(c, "HTML").entities.map((e) => [e.type, e.language])).toEqual([["pre", "js"]]);
    }
    expect(chunks.map(visible).join("")).toBe(visible(code));
  });

  it("prefers paragraph, then line, then word boundaries; short input is one trimmed chunk; blank is none", () => {
    expect(chunkHtml("  <b>hi</b>  ", 100)).toEqual(["<b>hi</b>"]);
    expect(chunkHtml(" \n ", 100)).toEqual([]);
    expect(chunkHtml("first para here\n\nsecond <i>para</i> here", 30)).toEqual(["first para here", "second <i>para</i> here"]);
    expect(() => chunkHtml("x", 0)).toThrow(RangeError);
  });

  it("keeps every visible character and every chunk parses (property)", () => {
    const piece = fc.constantFrom(
      "word ",
      "&amp; ",
      "&lt;x&gt; ",
      "<b>bold text</b> ",
      "<i>it <b>both</b></i> ",
      '<a href="https://x.test/p">link</a> ',
      "<code>a &lt; b</code> ",
      "\n",
      "\n\n",
      "<pre>l1\nl2\nl3</pre>\n",
      "😀 ",
      `${"longwordwithoutanyspaces".repeat(3)} `,
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 60 }), fc.integer({ min: 60, max: 300 }), (parts, limit) => {
        const html = parts.join("");
        const chunks = chunkHtml(html, limit);
        for (const c of chunks) {
          expect(c.length).toBeLessThanOrEqual(limit);
          applyParseMode(c, "HTML");
        }
        expect(chunks.map(visible).join("")).toBe(visible(html));
      }),
      { numRuns: 400 },
    );
  });
});
