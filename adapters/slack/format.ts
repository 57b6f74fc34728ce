/**
 * The agent's Markdown as Slack mrkdwn: *bold*, _italic_, ~strike~, `code`,
 * ``` blocks, > quotes, <url|label> links; headings become bold lines, lists
 * bullet lines, tables aligned blocks. &, < and > are escaped everywhere, so
 * a reply can never form `<!channel>` or a link of its own. mrkdwn has no
 * escape for its markers, so a literal *, ~ or ` in text (and _ at a word's
 * edge) is written as a look-alike character: "text that merely looks like
 * markup" is shown as typed instead of turning bold. Rendered before it is
 * split, so every chunk is measured as sent.
 */
import { chunkText } from "../../src/gateway/format/chunk-text.js";
import { literalMarkdown, renderMarkdown, withMark, type Dialect } from "../shared/markdown.js";
import type { ReplyFormat, Severity } from "../types.js";

/** Slack accepts 40,000 characters but shows past ~4,000 badly. */
export const SLACK_MAX_TEXT = 3500;

export function escapeSlackMrkdwn(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

const LOOKALIKE: Record<string, string> = { "*": "\u2217", "~": "\u223c", "`": "\uff40" };

const WORDY = /[\p{L}\p{N}]/u;

function text(s: string): string {
  return (
    escapeSlackMrkdwn(s)
      .replace(/[*~`]/g, (c) => LOOKALIKE[c]!)
      // An underscore stays only inside a word (snake_case), where Slack never reads it as italics.
      .replace(/_/g, (_c, i: number, s: string) => (WORDY.test(s[i - 1] ?? "") && WORDY.test(s[i + 1] ?? "") ? "_" : "\uff3f"))
  );
}

const fenceSafe = (s: string) => s.replace(/```/g, "\uff40\uff40\uff40");

export const slackDialect: Dialect = {
  text,
  strong: (s) => `*${s}*`,
  em: (s) => `_${s}_`,
  del: (s) => `~${s}~`,
  code: (s) => (s.trim() === "" ? text(s) : `\`${escapeSlackMrkdwn(s.replace(/`/g, "\uff40"))}\``),
  // The label is plain text: mrkdwn inside a link label is not rendered. | and > would end the link early.
  link: (href, _label, plain) => `<${escapeSlackMrkdwn(href).replace(/\|/g, "%7C")}|${text(plain).replace(/\|/g, "\u2223") || escapeSlackMrkdwn(href)}>`,
  heading: (s) => `*${s}*`,
  // Slack does not read a language after the fence; it would show as the first line.
  codeBlock: (code) => (code.trim() === "" ? "" : `\`\`\`\n${escapeSlackMrkdwn(fenceSafe(code.replace(/\n+$/, "")))}\n\`\`\``),
  // mrkdwn quotes do not nest: an inner quote is marked by a bar inside the outer one.
  quote: (inner, depth) => inner.replace(/^/gm, depth === 0 ? "> " : "▎"),
  hr: () => "──────────",
  indent: "    ",
};

export function renderSlackMrkdwn(markdown: string): string {
  return renderMarkdown(markdown, slackDialect);
}

/** How a notice of each severity is marked (info is plain): Slack's own emoji codes, mrkdwn emphasis. */
export const SLACK_NOTICE_MARKS: Record<Severity, string> = {
  error: ":x: *Error:*",
  warn: ":warning: _Warning:_",
  success: ":white_check_mark:",
  info: "",
};

export const slackFormat: ReplyFormat = {
  chunks: (markdown, severity) => chunkText(withMark(severity && SLACK_NOTICE_MARKS[severity], renderSlackMrkdwn(markdown)), SLACK_MAX_TEXT),
  literal: (markdown, severity) => chunkText(withMark(severity && SLACK_NOTICE_MARKS[severity], literalMarkdown(markdown, slackDialect)), SLACK_MAX_TEXT),
  split: (chunk, limit) => chunkText(chunk, limit),
  // Sent with mrkdwn off, Slack shows the characters as they are; &, < and > stay escaped (entities are decoded either way).
  plain: (chunk) => chunk,
};
