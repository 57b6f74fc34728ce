/**
 * How Slack shows a message's `text` with mrkdwn on: what a reader sees, and
 * the problems Slack's own rules name. Slack never refuses mrkdwn; it reads
 * `<…>` as a control sequence (a link, a mention, `<!channel>`) and `&` as
 * the start of an entity, which is why its docs require `&`, `<` and `>` in
 * text to be written `&amp;`, `&lt;`, `&gt;`. So the check reports:
 *   - a `<…>` that is not one of Slack's sequences (a link with a URL
 *     scheme, `<@U…>`, `<#C…>`, `<!here|channel|everyone>`, `<!subteam^…>`,
 *     `<!date^…>`), and a `<` with no `>`;
 *   - a `>` or `&` outside a sequence that is not part of an entity (a `>`
 *     starting a line is a block quote);
 *   - a mention of everyone (`<!channel>`, `<!here>`, `<!everyone>`).
 * The shown text drops *bold*, _italic_, ~strike~ and `code` markers (when
 * they pair up on word edges, as Slack pairs them), ``` fences and quote
 * markers, shows a link's label, and decodes the three entities.
 */
export interface MrkdwnView {
  shown: string;
  problems: string[];
}

const SEQUENCE =
  /^(?:(?:https?|mailto|tel|ftp):[^|<>\s]+(?:\|[^<>]*)?|@[UW][A-Z0-9]+(?:\|[^<>]*)?|#C[A-Z0-9]+(?:\|[^<>]*)?|!(?:here|channel|everyone)(?:\|[^<>]*)?|!subteam\^[A-Z0-9]+(?:\|[^<>]*)?|!date\^[^<>]+)$/;

export function mrkdwnView(text: string): MrkdwnView {
  const problems: string[] = [];
  let out = "";
  for (let i = 0; i < text.length; ) {
    const c = text[i]!;
    if (c === "<") {
      const end = text.indexOf(">", i);
      if (end < 0) {
        problems.push(`unescaped "<" at ${i} with no ">"`);
        out += c;
        i++;
        continue;
      }
      const inner = text.slice(i + 1, end);
      if (!SEQUENCE.test(inner)) problems.push(`"<${inner.slice(0, 40)}>" at ${i} is not a Slack sequence (escape < as &lt;)`);
      if (/^!(here|channel|everyone)/.test(inner)) problems.push(`"<${inner}>" at ${i} notifies everyone`);
      const bar = inner.indexOf("|");
      out += bar >= 0 ? inner.slice(bar + 1) : inner.replace(/^[@#!]/, "");
      i = end + 1;
      continue;
    }
    if (c === "&") {
      const m = /^&(amp|lt|gt);/.exec(text.slice(i, i + 5));
      if (!m) problems.push(`unescaped "&" at ${i} (write &amp;)`);
      out += m ? { amp: "&", lt: "<", gt: ">" }[m[1] as "amp" | "lt" | "gt"] : c;
      i += m ? m[0].length : 1;
      continue;
    }
    if (c === ">" && !(i === 0 || text[i - 1] === "\n")) problems.push(`unescaped ">" at ${i} (write &gt;)`);
    out += c;
    i++;
  }
  const shown = out
    .replace(/^```\n?|\n?```$/gm, "")
    .replace(/^> ?/gm, "")
    .replace(/(^|[\s(])([*_~`])(?=\S)([^\n]*?\S)\2(?=$|[\s.,;:!?)])/gm, "$1$3");
  return { shown, problems };
}
