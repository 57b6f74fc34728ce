/**
 * Probe: the names on a console approval card. The page renders a bot
 * message as Markdown (marked, then DOMPurify), and the card escaped the
 * names of people but not the tool's or its server's: those come from an MCP
 * server (its own name in the configuration, the tool names it lists), so a
 * tool named `x](javascript:…)`, or with `*`, `_`, backticks or a line break,
 * drew a link, emphasis, code or a new paragraph on the card an approver
 * reads. Each must show as the text it is.
 *
 * Rendered with the page's own renderer settings (adapters/console/static/markdown.js).
 */
import { Marked } from "marked";
import { describe, expect, it } from "vitest";
import { consoleCard } from "../../../adapters/console/approval-card.js";
import type { ApprovalCard } from "../../../adapters/types.js";

const page = new Marked({ gfm: true, breaks: true, async: false });
/** The HTML the page would get for a bot message. */
const render = (markdown: string) => page.parse(markdown) as string;

/** The visible text of an HTML fragment: tags out, the entities marked writes decoded. */
const textOf = (html: string) =>
  html
    .replace(/<br>/g, "\n")
    .replace(/<[^>]*>/g, "")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&");

/** What the card's title paragraph renders to: everything before the code block. */
const titleHtml = (card: ApprovalCard) => render(consoleCard(card).text).split("<pre>")[0]!;

const HOSTILE = [
  "x](javascript:alert(1))",
  "[click](javascript:alert(1))",
  "**bold** and _under_ and *em*",
  "`code` and ``two``",
  "two\nlines",
  "a\n\n# heading\n[ref]: javascript:alert(1)",
  "<img src=x onerror=alert(1)>",
  "https://evil.example/a_b",
  "www.evil.example",
  "mallory@evil.example",
  "~~struck~~ | table | cell |",
  "\\*escaped\\* and \\",
  "&amp; &lt;b&gt;",
  "tab\there\rand\u202eright-to-left\u200bzero-width",
];

/** How the card shows a name: unseen characters as their escapes, the rest as is. */
const shown = (s: string) =>
  s.replace(/[\p{Cc}\p{Cf}\u2028\u2029]/gu, (c) => ({ "\n": "\\n", "\r": "\\r", "\t": "\\t" })[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

const base: ApprovalCard = { id: "abc234", tool: "t", arguments: '{\n  "a": 1\n}', state: "pending" };

describe("names on a console approval card", () => {
  it.each(HOSTILE)("a tool and a server named %j show literally: no link, emphasis, code, line break or heading", (name) => {
    const html = titleHtml({ ...base, tool: name, server: name, requesterName: name });
    expect(html).not.toMatch(/<(a|em|strong|code|del|h\d|img|table|ul|ol|blockquote)\b/);
    // One paragraph of two lines (the title, the arguments' line): a line break in a name started neither.
    expect(html.match(/<p>/g)).toHaveLength(1);
    expect(html.match(/<br>/g)).toHaveLength(1);
    const s = shown(name);
    expect(textOf(html).trim()).toBe(`The agent wants to use the tool ${s} (server ${s}) for ${s}.\nArguments (${base.arguments.length} characters):`);
  });

  it("a decided card's names and reason show literally too, and the arguments stay whole in their code block", () => {
    const name = "x](javascript:alert(1)) *b* `c`\nd";
    const decided = render(consoleCard({ ...base, tool: name, server: name, state: "approved", decidedBy: name }).text);
    expect(decided).not.toMatch(/<(a|em|strong)\b/);
    expect(decided.match(/<code>/g)).toHaveLength(1);
    expect(textOf(decided)).toContain(`Approved by ${shown(name)}.`);
    expect(decided).toContain(`<pre><code>{\n  &quot;a&quot;: 1\n}\n</code></pre>`);
    const expired = render(consoleCard({ ...base, tool: name, state: "expired", reason: name }).text);
    expect(expired).not.toMatch(/<(a|em|strong)\b/);
    expect(expired.match(/<code>/g)).toHaveLength(1);
    expect(textOf(expired)).toContain(`Expired: ${shown(name)}.`);
  });
});
