/**
 * Token counts by estimate (issue 29): a budget reserves a call's prompt
 * before it is sent, and a provider that reports no usage is counted this
 * way (the row marked estimated). One encoding (o200k_base, today's OpenAI
 * models') is loaded, on first use only, to keep the process small; for
 * other models' tokenizers it is an estimate, which is all it claims to be.
 */
type Count = (text: string) => number;
let count: Count | undefined;
let loading: Promise<Count> | undefined;

/** No special token in a user's text may make counting throw: each counts as the text it is. */
const PLAIN = { disallowedSpecial: new Set<string>() };

async function counter(): Promise<Count> {
  if (count) return count;
  loading ??= import("gpt-tokenizer/encoding/o200k_base").then((m) => {
    count = (text: string) => m.countTokens(text, PLAIN);
    return count;
  });
  return loading;
}

/** Per message, the chat format's few tokens of framing (role, separators), as OpenAI documents them. */
const PER_MESSAGE = 4;

/**
 * What a budget reserves for a request's prompt, without loading the tokenizer (about 70 MB of a
 * process's memory, spent only when a provider reports no usage): a third of its UTF-8 bytes. A token
 * of o200k_base averages about 4 bytes of English and 3 of CJK text, so this bound sits at or above the
 * count for the text people send; the settlement then charges the provider's own count.
 */
export function promptBound(messages: readonly unknown[], tools?: unknown): number {
  let bytes = 0;
  for (const m of messages) bytes += Buffer.byteLength(typeof m === "string" ? m : JSON.stringify(m)) + 3 * PER_MESSAGE;
  if (tools) bytes += Buffer.byteLength(JSON.stringify(tools));
  return Math.ceil(bytes / 3) + 3;
}

/** The estimated tokens of a request's messages (and the tools' schemas offered with them). */
export async function estimatePromptTokens(messages: readonly unknown[], tools?: unknown): Promise<number> {
  const c = await counter();
  let n = 3;
  for (const m of messages) n += PER_MESSAGE + c(typeof m === "string" ? m : JSON.stringify(m));
  if (tools) n += c(JSON.stringify(tools));
  return n;
}

/** The estimated tokens of a completion's text (its tool calls' names and arguments included by the caller). */
export async function estimateTextTokens(text: string): Promise<number> {
  if (!text) return 0;
  return (await counter())(text);
}
