/**
 * The agent's Markdown as Telegram HTML (parse_mode HTML), rendered before it
 * is split, so every chunk is measured as sent. Safe by construction: the
 * only tags written are ones opened and closed here, properly nested, and
 * every other character is escaped; so user text quoted by the agent never
 * makes Telegram answer "can't parse entities". Should Telegram refuse a
 * chunk anyway, plainText() is what is sent instead, without parse_mode.
 */
import { chunkHtml } from "../../src/gateway/format/chunk-html.js";
import { literalMarkdown, renderMarkdown, withMark, type Dialect } from "../shared/markdown.js";
import type { ReplyFormat, Severity } from "../types.js";

/** Telegram's limit for one message: 4096 characters of text after entity parsing (the raw HTML is held to it too). */
export const TELEGRAM_MAX_TEXT = 4096;

const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };
export function escapeTelegramHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => HTML_ESCAPES[c]!);
}

const SAFE_LANG = /^[A-Za-z0-9_+#.-]{1,32}$/;
const CODE_OR_PRE = /(<pre>[\s\S]*?<\/pre>|<pre><code[^>]*>[\s\S]*?<\/code><\/pre>|<code>[\s\S]*?<\/code>)/;

/**
 * Wraps rendered HTML in a tag, leaving code and pre outside it: Telegram
 * does not let bold, italic or strikethrough contain code entities, so the
 * emphasis is closed around each code span and reopened after it.
 */
function around(tag: string, inner: string): string {
  return inner
    .split(CODE_OR_PRE)
    .map((part, i) => (i % 2 === 1 || part === "" ? part : part.trim() === "" ? part : `<${tag}>${part}</${tag}>`))
    .join("");
}

export const telegramDialect: Dialect = {
  text: escapeTelegramHtml,
  strong: (s) => around("b", s),
  em: (s) => around("i", s),
  del: (s) => around("s", s),
  code: (s) => (s.trim() === "" ? escapeTelegramHtml(s) : `<code>${escapeTelegramHtml(s)}</code>`),
  // A link may not contain a code entity: its label keeps the text only. A huge URL is shown as text,
  // so no tag can outgrow a chunk (chunkHtml reopens tags on every piece).
  link: (href, label) =>
    href.length > 1024 ? `${label} (${escapeTelegramHtml(href)})` : `<a href="${escapeTelegramHtml(href)}">${label.replace(/<\/?code>/g, "")}</a>`,
  heading: (s) => around("b", s),
  codeBlock: (code, lang) => {
    const body = code.replace(/\n+$/, "");
    if (body.trim() === "") return "";
    const esc = escapeTelegramHtml(body);
    return SAFE_LANG.test(lang) ? `<pre><code class="language-${lang}">${esc}</code></pre>` : `<pre>${esc}</pre>`;
  },
  // Telegram's blockquotes cannot be nested: an inner quote is marked by a bar instead.
  // Nor hold code: a code block inside a quote sits between two quotes.
  quote: (inner, depth) => (depth === 0 ? around("blockquote", inner) : inner.replace(/^/gm, "▎")),
  hr: () => "──────────",
  indent: "   ",
};

export function renderTelegramHtml(markdown: string): string {
  return renderMarkdown(markdown, telegramDialect);
}

/** What Telegram shows for a chunk: tags dropped, entities decoded (for sending without parse_mode). */
export function telegramPlainText(html: string): string {
  return html
    .replace(/<[^<>]*>/g, "")
    .replace(/&(#x[0-9a-fA-F]+|#[0-9]+|lt|gt|amp|quot);/g, (_m, e: string) =>
      e === "lt"
        ? "<"
        : e === "gt"
          ? ">"
          : e === "amp"
            ? "&"
            : e === "quot"
              ? '"'
              : String.fromCodePoint(e.startsWith("#x") ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10)),
    );
}

/** How a notice of each severity is marked (info is plain). */
export const TELEGRAM_NOTICE_MARKS: Record<Severity, string> = {
  error: "❌ <b>Error:</b>",
  warn: "⚠️ <i>Warning:</i>",
  success: "✅",
  info: "",
};

export const telegramFormat: ReplyFormat = {
  chunks: (markdown, severity) => chunkHtml(withMark(severity && TELEGRAM_NOTICE_MARKS[severity], renderTelegramHtml(markdown)), TELEGRAM_MAX_TEXT),
  literal: (markdown, severity) =>
    chunkHtml(withMark(severity && TELEGRAM_NOTICE_MARKS[severity], literalMarkdown(markdown, telegramDialect)), TELEGRAM_MAX_TEXT),
  split: (chunk, limit) => chunkHtml(chunk, limit),
  plain: telegramPlainText,
};
