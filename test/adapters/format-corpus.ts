/**
 * Markdown an agent writes, for the per-platform rendering tests: code
 * fences, nested lists, links, tables, block quotes, headings, and text that
 * merely looks like markup. Each sample is rendered for Telegram, Slack and
 * Discord and checked against the platform fakes' parsers.
 */
export const CORPUS: Array<{ name: string; md: string }> = [
  // Inline formatting
  { name: "bold italic strike", md: "**bold**, *italic*, _also italic_, ~~gone~~ and ***both***." },
  { name: "inline code with markup inside", md: "Run `a < b && c > d` or `**not bold**` now." },
  { name: "code span with backticks", md: "Use ``a ` tick`` here and ```x `` y```." },
  { name: "bold around code", md: "**bold `code` bold** and *it `x` it*" },
  { name: "line breaks", md: "first line  \nsecond line\nthird line" },
  { name: "paragraphs", md: "One paragraph.\n\nAnother paragraph with **emphasis**.\n\n\nA third." },
  // Links
  { name: "inline link", md: "See [the docs](https://example.com/docs?a=1&b=2) for more." },
  { name: "autolink and bare url", md: "Visit <https://example.com/a_b_c> or https://example.org/x?y=1." },
  { name: "link with formatted label", md: "[**bold** and `code` label](https://example.com)" },
  { name: "unsafe link", md: "[click](javascript:alert(1)) and [data](data:text/html,hi)" },
  { name: "link with quotes in url", md: '[q](https://x.test/"onclick=") stays harmless' },
  { name: "mailto and image", md: "Mail [me](mailto:a@b.test) or see ![a chart](https://x.test/c.png)" },
  // Headings
  { name: "atx headings", md: "# Title\n\n## Section *two*\n\n### Third\n\n#### Fourth\n\n##### Fifth ###" },
  { name: "setext heading", md: "Big title\n=========\n\nSmall title\n-----------\n\ntext" },
  // Lists
  { name: "bullet list", md: "- apples\n- pears\n- plums" },
  { name: "ordered list from 3", md: "3. three\n4. four\n5. five" },
  { name: "nested lists", md: "- fruit\n  - apple\n    - green\n    - red\n  - pear\n- veg\n  1. carrot\n  2. leek" },
  { name: "loose list with paragraphs", md: "1. First item\n\n   with a second paragraph.\n\n2. Second item" },
  { name: "task list", md: "- [x] done thing\n- [ ] open thing" },
  { name: "list with code block", md: "- step one:\n\n  ```sh\n  npm install\n  ```\n\n- step two" },
  // Code blocks
  { name: "fenced code with language", md: "```ts\nconst a = x < y && z;\nconsole.log(`${a}`);\n```" },
  { name: "fenced code without language", md: "```\nplain <b>text</b> & stuff\n```" },
  { name: "tilde fence", md: "~~~python\nprint('hi')\n~~~" },
  { name: "unclosed fence", md: "text before\n\n```js\nlet unclosed = true;\n<tag>" },
  { name: "indented code", md: "Paragraph:\n\n    indented code\n    more code" },
  { name: "fence containing fences", md: "````md\n```js\ninner\n```\n````" },
  { name: "hostile info string", md: '```"><script>alert(1)</script>\nx\n```' },
  // Tables
  { name: "simple table", md: "| name | qty |\n|------|----:|\n| apple | 3 |\n| pear | 12 |" },
  { name: "table with formatting", md: "| a | b |\n|---|---|\n| **bold** | `code` |\n| [link](https://x.test) | x |" },
  { name: "ragged table", md: "| one | two | three |\n|---|---|---|\n| 1 |\n| 1 | 2 | 3 |" },
  // Block quotes
  { name: "quote", md: "> quoted **text**\n> on two lines" },
  { name: "nested quote", md: "> outer\n> > inner\n> back out" },
  { name: "quote with list and code", md: "> - item\n> - `code`\n>\n> ```\n> block\n> ```" },
  { name: "horizontal rule", md: "above\n\n---\n\nbelow" },
  // Text that merely looks like markup
  { name: "raw html", md: "plain <b>not bold</b> & <script>alert(1)</script> <!-- note -->" },
  { name: "html block", md: "<div>\n<p>html block</p>\n</div>" },
  { name: "math and snake case", md: "2 * 3 * 4 = 24, snake_case_name, __init__ and a_b_c." },
  { name: "comparison operators", md: "if a < b and b > c then a <= c && c >= 0" },
  { name: "escaped markers", md: "\\*not italic\\*, \\_not either\\_, \\`no code\\`, \\# no heading" },
  { name: "lone markers", md: "** ~~ __ * _ ` and a trailing *" },
  { name: "unbalanced emphasis", md: "**unclosed and *crossed** text*" },
  { name: "entities as text", md: "&amp; &lt; &gt; &quot; &#169; & ;" },
  { name: "slack control sequences", md: "<!channel> <!here> <@U123> <#C123|general> <https://x.test|label>" },
  { name: "discord mentions", md: "hey @everyone and @here, <@&123456> and <@987654>" },
  { name: "pipes and brackets", md: "a | b | c and [not a link] and [x]: y" },
  { name: "hash and dash starts", md: "#hashtag not a heading\n-dash not a list\n1.5 is a number" },
  { name: "emoji and cjk", md: "**重要** 😀 of *é* and 今日は晴れです。" },
  { name: "windows newlines", md: "line one\r\nline **two**\r\n\r\n- item\r\n" },
  {
    name: "long mixed document",
    md: [
      "# Report",
      "",
      "Intro with **bold** and a [link](https://x.test).",
      "",
      "- one",
      "  - nested `code`",
      "",
      "| k | v |",
      "|---|---|",
      "| a | 1 |",
      "",
      "> a quote",
      "",
      "```js",
      "const x = 1 < 2;",
      "```",
    ].join("\n"),
  },
];

/**
 * Input that once cost marked far more than its length (issue 26, item 7):
 * 4,000 nested quotes overflowed the stack, 300 nested list levels took
 * seconds (2,000 over 80 s), and openers that never close made every scan read to the end.
 */
export const PATHOLOGICAL: Array<{ name: string; md: string }> = [
  { name: "4,000 nested quotes", md: `deep:\n${">".repeat(4000)} hi` },
  { name: "underscore openers", md: "_a".repeat(8000) },
  { name: "asterisk openers", md: "*a".repeat(8000) },
  { name: "strong openers", md: "**a".repeat(6000) },
  { name: "tilde openers", md: "~a".repeat(8000) },
  { name: "backtick openers", md: "`a".repeat(8000) },
  { name: "brackets", md: "[".repeat(5000) },
  { name: "link openers", md: "[a](".repeat(4000) },
  { name: "angle openers", md: "<a".repeat(8000) },
  // 300 levels are 90,000 characters, about what a model's longest answer can be.
  { name: "lists nested by indentation", md: Array.from({ length: 300 }, (_, i) => `${"  ".repeat(i)}- x${i}`).join("\n") },
  { name: "lists nested on one line", md: `${"- ".repeat(3000)}x` },
  { name: "quotes and lists interleaved", md: `${"> - ".repeat(2000)}x` },
];
