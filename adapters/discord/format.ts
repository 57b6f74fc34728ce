/**
 * The agent's Markdown as Discord markdown. Discord reads most of Markdown
 * itself, so this mostly writes it back normalized: headings 1-3 stay
 * headings (deeper ones bold), tables become aligned code blocks, and
 * literal text has Discord's markers backslash-escaped, so text that merely
 * looks like markup is shown as typed. @everyone, @here and role mentions
 * are defused (a zero-width space) as part of rendering, BEFORE the text is
 * split: the split measures what is sent, so a full 2,000-character chunk
 * never grows past Discord's limit afterwards.
 */
import { chunkText } from "../../src/gateway/format/chunk-text.js";
import { literalMarkdown, renderMarkdown, withMark, type Dialect } from "../shared/markdown.js";
import type { ReplyFormat, Severity } from "../types.js";

/** Discord's limit for a message's content. */
export const DISCORD_MAX_CONTENT = 2000;

const ZWSP = "\u200b";

/**
 * Defuses @everyone, @here and role mentions (<@&id>) so a prompt-injected
 * reply can't ping a server. Defence in depth: replies are also sent with
 * allowed_mentions that parse nothing.
 */
export function neutralizeDiscordMentions(s: string): string {
  return s.replace(/@(everyone|here)/gi, `@${ZWSP}$1`).replace(/<@&/g, `<@${ZWSP}&`);
}

function text(s: string): string {
  return s.replace(/[\\*_~`|[\]]/g, "\\$&").replace(/^([ \t]*)(>|#|-|\+|\d+\.)(?=\s|$)/gm, "$1\\$2");
}

/** An inline code span whose fence is longer than any backtick run inside. */
function code(s: string): string {
  if (s.trim() === "") return text(s);
  const longest = Math.max(0, ...[...s.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = "`".repeat(longest + 1);
  return longest > 0 ? `${fence} ${s} ${fence}` : `${fence}${s}${fence}`;
}

export const discordDialect: Dialect = {
  text,
  strong: (s) => `**${s}**`,
  em: (s) => `*${s}*`,
  del: (s) => `~~${s}~~`,
  code,
  link: (href, label) => `[${label}](${href})`,
  heading: (s, depth) => (depth <= 3 ? `${"#".repeat(depth)} ${s}` : `**${s}**`),
  codeBlock: (body, lang) =>
    body.trim() === ""
      ? ""
      : `\`\`\`${/^[A-Za-z0-9_+#.-]{1,32}$/.test(lang) ? lang : ""}\n${body.replace(/\n+$/, "").replace(/```/g, "\uff40\uff40\uff40")}\n\`\`\``,
  // Discord quotes do not nest: an inner quote is marked by a bar inside the outer one.
  quote: (inner, depth) => inner.replace(/^/gm, depth === 0 ? "> " : "▎"),
  hr: () => "──────────",
  indent: "  ",
  bullet: (_depth, ordered, n) => (ordered ? `${n}.` : "-"),
};

export function renderDiscordMarkdown(markdown: string): string {
  return neutralizeDiscordMentions(renderMarkdown(markdown, discordDialect));
}

/** How a notice of each severity is marked (info is plain). */
export const DISCORD_NOTICE_MARKS: Record<Severity, string> = {
  error: "❌ **Error:**",
  warn: "⚠️ *Warning:*",
  success: "✅",
  info: "",
};

export const discordFormat: ReplyFormat = {
  chunks: (markdown, severity) => chunkText(withMark(severity && DISCORD_NOTICE_MARKS[severity], renderDiscordMarkdown(markdown)), DISCORD_MAX_CONTENT),
  literal: (markdown, severity) =>
    chunkText(withMark(severity && DISCORD_NOTICE_MARKS[severity], neutralizeDiscordMentions(literalMarkdown(markdown, discordDialect))), DISCORD_MAX_CONTENT),
  split: (chunk, limit) => chunkText(chunk, limit),
  // Discord never refuses content for its markdown; the rendered chunk is already what a reader sees.
  plain: (chunk) => chunk,
};
