/**
 * Token counts by estimate (issue 29): a budget reserves a call's prompt
 * before it is sent, and a provider that reports no usage is counted this
 * way (the row marked estimated). One encoding (o200k_base, today's OpenAI
 * models') is loaded, on first use only, to keep the process small, and in
 * a worker thread (token-counter.ts), where its load holds no chat; for
 * other models' tokenizers it is an estimate, which is all it claims to be.
 *
 * Until the worker has loaded (about 200 ms after the first estimate asks
 * for it), an estimate is a bound instead of a wait: every answer that
 * settled in that window waited on the load (the paced bench's slowest 1%).
 * A prompt is charged what its reservation counted (promptBound); a
 * completion its UTF-8 bytes, which no count exceeds (each o200k_base token
 * is at least one byte), since a model's output may be any text (half a
 * token per ASCII character is under the count for random ASCII). A budget
 * is charged more, not less, for those few calls.
 */
import { countTokens, tokenCounterLoaded, warmTokenCounter } from "./token-counter.js";

/** Per message, the chat format's few tokens of framing (role, separators), as OpenAI documents them. */
const PER_MESSAGE = 4;

/**
 * What a budget reserves for a request's prompt, without loading the tokenizer (about 70 MB of a
 * process's memory, spent only when a provider reports no usage): half a token per ASCII character
 * (o200k_base averages about 4.5 per token in English, 2.6 in code and JSON) and 1.2 per other UTF-16 unit
 * (CJK runs about one token per character), so the bound sits at or above the count for the text
 * people send; the settlement then charges the provider's own count.
 */
export function promptBound(messages: readonly unknown[], tools?: unknown): number {
  let weight = 0;
  let images = 0;
  for (const m of messages) {
    const text = typeof m === "string" ? m : JSON.stringify(m);
    // An image is sent as a data: URL, but a model counts it by its tiles, not its bytes.
    const withoutImages = text.replace(DATA_URL, () => {
      images++;
      return "";
    });
    weight += textWeight(withoutImages) + PER_MESSAGE;
  }
  if (tools) weight += textWeight(JSON.stringify(tools));
  return Math.ceil(weight) + 3 + images * IMAGE_TOKENS;
}

function textWeight(text: string): number {
  let ascii = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) < 128) ascii++;
  return ascii / 2 + (text.length - ascii) * 1.2;
}

const DATA_URL = /data:image\/[a-z0-9.+-]+;base64,[A-Za-z0-9+/=]+/g;
/** What one image may cost: OpenAI's high-detail count for a 2048 x 768 image (765 tokens), with room. */
const IMAGE_TOKENS = 1500;

/** The estimated tokens of a request's messages (and the tools' schemas offered with them). */
export async function estimatePromptTokens(messages: readonly unknown[], tools?: unknown): Promise<number> {
  return (await estimateCallTokens(messages, tools, "")).prompt;
}

/**
 * A call's prompt and completion, counted in one exchange with the
 * tokenizer's worker: each exchange wakes the worker and waits for its
 * answer, on the way to the call's settlement and so to the answer itself
 * (issue 31: two exchanges per model call were a fifth of a millisecond
 * each of the loop's time on the bench, more on a loaded machine).
 */
export async function estimateCallTokens(messages: readonly unknown[], tools: unknown, completion: string): Promise<{ prompt: number; completion: number }> {
  if (!tokenCounterLoaded()) {
    warmTokenCounter();
    return { prompt: promptBound(messages, tools), completion: Buffer.byteLength(completion, "utf8") };
  }
  const texts = messages.map((m) => (typeof m === "string" ? m : JSON.stringify(m)));
  if (tools) texts.push(JSON.stringify(tools));
  // The completion goes last; an empty one is not sent (it counts 0).
  if (completion) texts.push(completion);
  const counts = await countTokens(texts);
  const completionTokens = completion ? counts.pop()! : 0;
  return { prompt: 3 + messages.length * PER_MESSAGE + counts.reduce((a, b) => a + b, 0), completion: completionTokens };
}

/** The estimated tokens of a completion's text (its tool calls' names and arguments included by the caller). */
export async function estimateTextTokens(text: string): Promise<number> {
  if (!text) return 0;
  if (!tokenCounterLoaded()) {
    warmTokenCounter();
    return Buffer.byteLength(text, "utf8");
  }
  const [n] = await countTokens([text]);
  return n!;
}
