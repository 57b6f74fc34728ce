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
 * process's memory, spent only when a provider reports no usage): the text's UTF-8 bytes, since every
 * o200k_base token is at least one byte, so no count exceeds it, whatever the text (base64, hex dumps and
 * code run 0.56 to 0.75 tokens per ASCII character: half a token per character, the bound before, was
 * under the count for them, and calls admitted together could pass a budget by that much more). Images
 * are counted by their tiles, not their bytes; the settlement then charges the provider's own count.
 */
export function promptBound(messages: readonly unknown[], tools?: unknown): number {
  let bytes = 0;
  let images = 0;
  for (const m of messages) {
    const text = typeof m === "string" ? m : JSON.stringify(m);
    // An image is sent as a data: URL, but a model counts it by its tiles, not its bytes.
    const withoutImages = text.replace(DATA_URL, () => {
      images++;
      return "";
    });
    bytes += Buffer.byteLength(withoutImages, "utf8") + PER_MESSAGE;
  }
  if (tools) bytes += Buffer.byteLength(JSON.stringify(tools), "utf8");
  return bytes + 3 + images * IMAGE_TOKENS;
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
