import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  escapeSlackMrkdwn,
  escapeTelegramHtml,
  markdownToTelegramHtml,
  neutralizeDiscordMentions,
} from "../../src/gateway/markup.js";

/**
 * Checks `html` against what Telegram's HTML parse mode accepts: only known
 * tags, properly nested, no tag inside code/pre (bar <pre><code>), no
 * code/pre inside other entities, no link inside a link, and every &, < and >
 * outside a tag written as an entity. Throws with the reason.
 */
function assertTelegramHtml(html: string): void {
  const stack: string[] = [];
  const tag = /<(\/?)(b|i|s|code|pre|a)((?: href="[^"<>]*")|(?: class="language-[A-Za-z0-9_+#.-]+"))?>/y;
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

describe("escaping", () => {
  it("escapes Telegram HTML, including quotes for attributes", () => {
    expect(escapeTelegramHtml(`a < b && c > "d"`)).toBe("a &lt; b &amp;&amp; c &gt; &quot;d&quot;");
  });

  it("escapes only &, < and > for Slack", () => {
    expect(escapeSlackMrkdwn(`<!channel> & "x" *y*`)).toBe(`&lt;!channel&gt; &amp; "x" *y*`);
  });

  it("defuses @everyone, @here and role mentions but keeps user mentions", () => {
    const out = neutralizeDiscordMentions("hi @everyone and @Here, <@&123> and <@456>");
    expect(out).not.toMatch(/@everyone|@here|<@&/i);
    expect(out.replaceAll("\u200b", "")).toBe("hi @everyone and @Here, <@&123> and <@456>");
    expect(out).toContain("<@456>");
  });
});

describe("markdownToTelegramHtml", () => {
  const cases: [string, string][] = [
    ["plain <b>not bold</b> & co", "plain &lt;b&gt;not bold&lt;/b&gt; &amp; co"],
    ["**bold** and *it* and _it_", "<b>bold</b> and <i>it</i> and <i>it</i>"],
    ["***both***", "<b><i>both</i></b>"],
    ["~~gone~~", "<s>gone</s>"],
    ["use `a<b>` here", "use <code>a&lt;b&gt;</code> here"],
    ["``has ` tick``", "<code>has ` tick</code>"],
    ["snake_case_name and 2*3*4", "snake_case_name and 2<i>3</i>4"],
    ["a * b * c", "a * b * c"],
    ["**unclosed and *crossed** text*", "<b>unclosed and *crossed</b> text*"],
    ["\\*literal\\*", "*literal*"],
    ["[docs](https://x.test/a?b=1&c=2)", '<a href="https://x.test/a?b=1&amp;c=2">docs</a>'],
    ['[q](https://x.test/"onclick=")', '[q](https://x.test/&quot;onclick=&quot;)'],
    ["[**bold** link](https://x.test)", '<a href="https://x.test"><b>bold</b> link</a>'],
    ["[bad](javascript:alert(1))", "[bad](javascript:alert(1))"],
    ["[`code` in link](https://x.test)", '<a href="https://x.test">`code` in link</a>'],
    ["**bold `code` bold**", "<b>bold </b><code>code</code><b> bold</b>"],
    ["**`only code`**", "<code>only code</code>"],
    ["# Title ##", "<b>Title</b>"],
    ["## *Sub* title", "<b><i>Sub</i> title</b>"],
    ["```ts\nconst a = x < y && z;\n```", '<pre><code class="language-ts">const a = x &lt; y &amp;&amp; z;</code></pre>'],
    ['```"><script>\nx\n```', "<pre>x</pre>"],
    ["~~~\nplain\n~~~", "<pre>plain</pre>"],
    ["para one\n\npara **two**\nline", "para one\n\npara <b>two</b>\nline"],
    ["```\nunclosed <fence>", "<pre>unclosed &lt;fence&gt;</pre>"],
    ["****", "****"],
  ];
  it.each(cases)("%j", (md, html) => {
    expect(markdownToTelegramHtml(md)).toBe(html);
    assertTelegramHtml(html);
  });

  it("does not let emphasis run across a code block or a blank line", () => {
    const html = markdownToTelegramHtml("**start\n\n```\ncode\n```\nend**");
    expect(html).toBe("**start\n\n<pre>code</pre>\nend**");
  });

  it("stays linear on hostile input", () => {
    const hostile = "[".repeat(50_000) + "`".repeat(3) + " ` `` ".repeat(20_000) + "*a ".repeat(50_000) + "_".repeat(10_000);
    assertTelegramHtml(markdownToTelegramHtml(hostile));
  });

  const markdownish = fc.string({
    unit: fc.constantFrom(
      "*", "**", "_", "__", "~~", "`", "```", "[", "]", "(", ")", "](", "](https://x.test/", "](javascript:", "\\",
      "<", ">", "&", '"', "&amp;", "<b>", "</i>", "\n", "\n\n", "\n```ts\n", "\n~~~\n", "# ", " ", "a", "b", "Z", "1", ".", "😀", "é",
    ),
    maxLength: 120,
  });

  it("always produces valid Telegram HTML (property)", () => {
    fc.assert(
      fc.property(markdownish, (md) => {
        assertTelegramHtml(markdownToTelegramHtml(md));
      }),
      { numRuns: 3000 },
    );
  });

  it("never lets a raw < through from arbitrary text (property)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 200 }), (s) => {
        const html = markdownToTelegramHtml(s);
        assertTelegramHtml(html);
        // Every "<" the converter writes starts one of its own tags.
        expect(html.replace(/<\/?(b|i|s|code|pre|a)( href="[^"<>]*"| class="language-[\w+#.-]+")?>/g, "")).not.toContain("<");
      }),
      { numRuns: 1000 },
    );
  });
});
