/**
 * Telegram's parse_mode handling, close enough to catch the mistakes bots make:
 * unescaped MarkdownV2 reserved characters, unbalanced or unsupported HTML
 * tags, unclosed entities. Returns the plain text and entities Telegram would
 * store, or throws a TgApiError with Telegram's wording ("Bad Request: can't
 * parse entities: ...").
 */
import { TgApiError, type TgEntity } from "./types.js";

export interface Formatted {
  text: string;
  entities: TgEntity[];
}

const bytesBefore = (s: string, i: number): number => Buffer.byteLength(s.slice(0, i), "utf8");
const fail = (msg: string): never => {
  throw new TgApiError(400, `Bad Request: can't parse entities: ${msg}`);
};

export function applyParseMode(text: string, parseMode: string | undefined): Formatted {
  if (!parseMode) return { text, entities: [] };
  switch (parseMode) {
    case "HTML":
      return parseHtml(text);
    case "MarkdownV2":
      return parseMarkdownV2(text);
    case "Markdown":
      return parseMarkdownLegacy(text);
    default:
      throw new TgApiError(400, "Bad Request: unsupported parse_mode");
  }
}

const finish = (text: string, entities: TgEntity[]): Formatted => ({
  text,
  entities: entities.filter((e) => e.length > 0).sort((a, b) => a.offset - b.offset || b.length - a.length),
});

// ---------------------------------------------------------------- HTML

const HTML_TAGS: Record<string, string> = {
  b: "bold",
  strong: "bold",
  i: "italic",
  em: "italic",
  u: "underline",
  ins: "underline",
  s: "strikethrough",
  strike: "strikethrough",
  del: "strikethrough",
  "tg-spoiler": "spoiler",
  span: "spoiler",
  a: "text_link",
  code: "code",
  pre: "pre",
  blockquote: "blockquote",
  "tg-emoji": "custom_emoji",
};
const NAMED: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"' };

export function parseHtml(src: string): Formatted {
  let out = "";
  const entities: TgEntity[] = [];
  const stack: HtmlOpen[] = [];
  let i = 0;
  while (i < src.length) {
    const ch = src[i]!;
    if (ch === "&") {
      const m = /^&(#x[0-9a-fA-F]+|#[0-9]+|[a-zA-Z]+);/.exec(src.slice(i));
      if (m) {
        const name = m[1]!;
        if (name.startsWith("#x")) out += String.fromCodePoint(parseInt(name.slice(2), 16));
        else if (name.startsWith("#")) out += String.fromCodePoint(parseInt(name.slice(1), 10));
        else if (NAMED[name] !== undefined) out += NAMED[name];
        else out += m[0];
        i += m[0].length;
      } else {
        out += ch;
        i++;
      }
      continue;
    }
    if (ch !== "<") {
      out += ch;
      i++;
      continue;
    }
    const close = src.indexOf(">", i);
    if (close < 0) fail(`Unclosed start tag at byte offset ${bytesBefore(src, i)}`);
    const inner = src.slice(i + 1, close);
    if (inner.startsWith("/")) {
      const name = inner.slice(1).trim().toLowerCase();
      const top = stack.pop();
      if (!top) fail(`Unexpected end tag at byte offset ${bytesBefore(src, i)}`);
      else if (name !== top.tag) fail(`Can't find end tag corresponding to start tag "${top.tag}" at byte offset ${bytesBefore(src, top.at)}`);
      else closeHtmlEntity(top, out.length, stack, entities);
      i = close + 1;
      continue;
    }
    const m = /^([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[a-zA-Z-]+\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]+))*)\s*$/.exec(inner);
    const name = m?.[1]?.toLowerCase() ?? "";
    if (!m || HTML_TAGS[name] === undefined) fail(`Unsupported start tag "${name || inner.split(/\s/)[0]}" at byte offset ${bytesBefore(src, i)}`);
    const attrs: Record<string, string> = {};
    for (const a of (m?.[2] ?? "").matchAll(/([a-zA-Z-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/g)) attrs[a[1]!.toLowerCase()] = a[2] ?? a[3] ?? a[4] ?? "";
    if (name === "span" && attrs.class !== "tg-spoiler") fail(`Tag "span" must have class "tg-spoiler" at byte offset ${bytesBefore(src, i)}`);
    stack.push({ tag: name, start: out.length, attrs, at: i });
    i = close + 1;
  }
  const open = stack.pop();
  if (open) fail(`Can't find end tag corresponding to start tag "${open.tag}"`);
  return finish(out, entities);
}

interface HtmlOpen {
  tag: string;
  start: number;
  attrs: Record<string, string>;
  at: number;
}

function closeHtmlEntity(top: HtmlOpen, end: number, stack: HtmlOpen[], entities: TgEntity[]): void {
  const type = HTML_TAGS[top.tag]!;
  const e: TgEntity = { type, offset: top.start, length: end - top.start };
  if (type === "text_link") e.url = top.attrs.href ?? "";
  if (type === "custom_emoji") e.custom_emoji_id = top.attrs["emoji-id"] ?? "";
  if (type === "blockquote" && "expandable" in top.attrs) e.type = "expandable_blockquote";
  if (type === "code" && stack.at(-1)?.tag === "pre") {
    // <pre><code class="language-x"> is one pre entity with a language.
    const lang = /^language-(.+)$/.exec(top.attrs.class ?? "")?.[1];
    if (lang) stack.at(-1)!.attrs.__lang = lang;
    return;
  }
  if (type === "pre" && top.attrs.__lang) e.language = top.attrs.__lang;
  entities.push(e);
}

// ---------------------------------------------------------------- MarkdownV2

const RESERVED_V2 = "_*[]()~`>#+-=|{}.!";

export function parseMarkdownV2(src: string): Formatted {
  let out = "";
  const entities: TgEntity[] = [];
  const stack: { type: string; start: number; at: number }[] = [];
  let quote: { start: number } | null = null;
  let i = 0;
  const open = (type: string, at: number): void => {
    stack.push({ type, start: out.length, at });
  };
  const toggle = (type: string, at: number): void => {
    const idx = stack.map((s) => s.type).lastIndexOf(type);
    if (idx < 0) return open(type, at);
    if (idx !== stack.length - 1) fail(`Can't find end of ${stack.at(-1)!.type} entity at byte offset ${bytesBefore(src, stack.at(-1)!.at)}`);
    const s = stack.pop()!;
    entities.push({ type, offset: s.start, length: out.length - s.start });
  };
  while (i < src.length) {
    const ch = src[i]!;
    const atLineStart = i === 0 || src[i - 1] === "\n";
    if (atLineStart && ch === ">") {
      if (!quote) quote = { start: out.length };
      i++;
      continue;
    }
    if (ch === "\n" && quote && src[i + 1] !== ">") {
      entities.push({ type: "blockquote", offset: quote.start, length: out.length - quote.start });
      quote = null;
    }
    if (ch === "\\") {
      const next = src[i + 1];
      if (next === undefined) fail(`Character '\\' is reserved and must be escaped with the preceding '\\'`);
      out += next;
      i += 2;
      continue;
    }
    if (ch === "`") {
      const isPre = src.startsWith("```", i);
      const start = i;
      i += isPre ? 3 : 1;
      let language: string | undefined;
      if (isPre) {
        const nl = src.indexOf("\n", i);
        const fence = src.indexOf("```", i);
        if (nl >= 0 && (fence < 0 || nl < fence)) {
          const lang = src.slice(i, nl);
          if (lang) language = lang;
          i = nl + 1;
        }
      }
      const codeStart = out.length;
      let closed = false;
      while (i < src.length) {
        if (src[i] === "\\" && i + 1 < src.length) {
          out += src[i + 1];
          i += 2;
          continue;
        }
        if (isPre ? src.startsWith("```", i) : src[i] === "`") {
          i += isPre ? 3 : 1;
          closed = true;
          break;
        }
        out += src[i];
        i++;
      }
      if (!closed) fail(`Can't find end of the entity starting at byte offset ${bytesBefore(src, start)}`);
      const e: TgEntity = { type: isPre ? "pre" : "code", offset: codeStart, length: out.length - codeStart };
      if (language) e.language = language;
      entities.push(e);
      continue;
    }
    if (ch === "*") {
      toggle("bold", i);
      i++;
      continue;
    }
    if (ch === "_") {
      if (src[i + 1] === "_") {
        toggle("underline", i);
        i += 2;
      } else {
        toggle("italic", i);
        i++;
      }
      continue;
    }
    if (ch === "~") {
      toggle("strikethrough", i);
      i++;
      continue;
    }
    if (ch === "|" && src[i + 1] === "|") {
      toggle("spoiler", i);
      i += 2;
      continue;
    }
    if (ch === "[" || (ch === "!" && src[i + 1] === "[")) {
      open(ch === "!" ? "custom_emoji" : "text_link", i);
      i += ch === "!" ? 2 : 1;
      continue;
    }
    if (ch === "]") {
      const top = stack.at(-1);
      if (!top || (top.type !== "text_link" && top.type !== "custom_emoji") || src[i + 1] !== "(")
        fail(`Character ']' is reserved and must be escaped with the preceding '\\'`);
      let j = i + 2;
      let url = "";
      while (j < src.length && src[j] !== ")") {
        if (src[j] === "\\" && j + 1 < src.length) j++;
        url += src[j];
        j++;
      }
      if (j >= src.length) fail(`Can't find end of a url for the entity starting at byte offset ${bytesBefore(src, top!.at)}`);
      stack.pop();
      const e: TgEntity = { type: top!.type, offset: top!.start, length: out.length - top!.start };
      if (top!.type === "text_link") e.url = url;
      else e.custom_emoji_id = /id=(\d+)/.exec(url)?.[1] ?? url;
      entities.push(e);
      i = j + 1;
      continue;
    }
    if (RESERVED_V2.includes(ch)) fail(`Character '${ch}' is reserved and must be escaped with the preceding '\\'`);
    out += ch;
    i++;
  }
  if (quote) entities.push({ type: "blockquote", offset: quote.start, length: out.length - quote.start });
  const unclosed = stack.pop();
  if (unclosed) fail(`Can't find end of the entity starting at byte offset ${bytesBefore(src, unclosed.at)}`);
  return finish(out, entities);
}

// ---------------------------------------------------------------- Markdown (legacy)

export function parseMarkdownLegacy(src: string): Formatted {
  let out = "";
  const entities: TgEntity[] = [];
  let i = 0;
  const types: Record<string, string> = { "*": "bold", _: "italic", "`": "code" };
  while (i < src.length) {
    const ch = src[i]!;
    if (ch === "\\" && i + 1 < src.length && "_*`[".includes(src[i + 1]!)) {
      out += src[i + 1];
      i += 2;
      continue;
    }
    if (src.startsWith("```", i)) {
      const end = src.indexOf("```", i + 3);
      if (end < 0) fail(`Can't find end of the entity starting at byte offset ${bytesBefore(src, i)}`);
      let body = src.slice(i + 3, end);
      let language: string | undefined;
      const nl = body.indexOf("\n");
      if (nl > 0 && !/\s/.test(body.slice(0, nl))) {
        language = body.slice(0, nl);
        body = body.slice(nl + 1);
      }
      const e: TgEntity = { type: "pre", offset: out.length, length: body.length };
      if (language) e.language = language;
      entities.push(e);
      out += body;
      i = end + 3;
      continue;
    }
    const type = types[ch];
    if (type) {
      const end = src.indexOf(ch, i + 1);
      if (end < 0) fail(`Can't find end of the entity starting at byte offset ${bytesBefore(src, i)}`);
      const body = src.slice(i + 1, end);
      entities.push({ type, offset: out.length, length: body.length });
      out += body;
      i = end + 1;
      continue;
    }
    if (ch === "[") {
      const m = /^\[([^\]]*)\]\(([^)]*)\)/.exec(src.slice(i));
      if (!m) fail(`Can't find end of the entity starting at byte offset ${bytesBefore(src, i)}`);
      entities.push({ type: "text_link", offset: out.length, length: m![1]!.length, url: m![2]! });
      out += m![1];
      i += m![0].length;
      continue;
    }
    out += ch;
    i++;
  }
  return finish(out, entities);
}
