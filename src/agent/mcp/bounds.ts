/**
 * What one MCP server may put on the gateway: a server is a third party, and
 * what it lists is offered to the model on every turn of every chat it is
 * visible in, so it is bounded here, where it is received, and anything cut
 * is logged. A server's misbehaviour then costs its own calls only.
 */
import type { AgentLog } from "../types.js";

/** OpenAI's own limit on the functions of one request; a server past it would fail every turn it is offered in. */
export const MAX_TOOLS_PER_SERVER = 128;
export const MAX_DESCRIPTION_CHARS = 2_000;
/** A tool whose input schema serializes past this is not offered (it would be sent on every turn). */
export const MAX_SCHEMA_BYTES = 16_000;
/** An HTTP answer to one request (a POST): as the SDK's stdio transport caps a message. */
export const MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

export interface ListedTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** The server's list as the hub keeps it: at most MAX_TOOLS_PER_SERVER, descriptions cut, giant schemas dropped. */
export function boundedTools(
  server: string,
  listed: ReadonlyArray<{ name: string; description?: string; inputSchema?: unknown }>,
  log: AgentLog,
): ListedTool[] {
  const out: ListedTool[] = [];
  let cut = 0;
  let dropped = 0;
  for (const t of listed) {
    if (out.length >= MAX_TOOLS_PER_SERVER) break;
    const inputSchema = (t.inputSchema ?? { type: "object" }) as Record<string, unknown>;
    if (schemaBytes(inputSchema) > MAX_SCHEMA_BYTES) {
      dropped++;
      continue;
    }
    let description = typeof t.description === "string" ? t.description : "";
    if (description.length > MAX_DESCRIPTION_CHARS) {
      description = `${description.slice(0, MAX_DESCRIPTION_CHARS)}…`;
      cut++;
    }
    out.push({ name: t.name, description, inputSchema });
  }
  const over = Math.max(0, listed.length - dropped - out.length);
  if (over || dropped || cut)
    log.warn(
      { server, listed: listed.length, kept: out.length, overLimit: over, schemaTooLarge: dropped, descriptionsCut: cut },
      `mcp server lists more than the gateway offers the model: at most ${MAX_TOOLS_PER_SERVER} tools, schemas up to ${MAX_SCHEMA_BYTES} bytes, descriptions cut at ${MAX_DESCRIPTION_CHARS} characters`,
    );
  return out;
}

function schemaBytes(schema: unknown): number {
  try {
    return Buffer.byteLength(JSON.stringify(schema) ?? "", "utf8");
  } catch {
    return Number.POSITIVE_INFINITY; // too deep to serialize: too large to send
  }
}

/** A value as JSON text, never throwing (a structure too deep for JSON.stringify says so instead). */
export function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return "[structured content too deeply nested to show]";
  }
}

/** The characters a status line may show of a server's words: no controls, no reordering. */
export function printable(text: string): string {
  return text.replace(/[\p{Cc}\p{Cf}\u2028\u2029]/gu, "?");
}

/** An answer over MAX_RESPONSE_BYTES: that call fails; the server is not taken for gone. */
export class AnswerTooLarge extends Error {
  override readonly name = "AnswerTooLarge";
}

/**
 * The HTTP transport's fetch: a POST's answer is refused past MAX_RESPONSE_BYTES, by its Content-Length or
 * as it streams, before it is buffered whole (the SDK's stdio transport caps a message the same way).
 */
export function boundedFetch(inner: (url: string | URL, init?: RequestInit) => Promise<Response>, maxBytes = MAX_RESPONSE_BYTES) {
  return async (input: string | URL, init?: RequestInit): Promise<Response> => {
    const res = await inner(input, init);
    if ((init?.method ?? "GET").toUpperCase() !== "POST" || !res.body) return res;
    const declared = Number(res.headers.get("content-length") ?? "0");
    if (declared > maxBytes) {
      await res.body.cancel().catch(() => undefined);
      throw new AnswerTooLarge(`the MCP server's answer is ${declared} bytes, over the ${maxBytes}-byte limit`);
    }
    let seen = 0;
    const limited = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen > maxBytes) controller.error(new AnswerTooLarge(`the MCP server's answer went over the ${maxBytes}-byte limit`));
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(limited, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
