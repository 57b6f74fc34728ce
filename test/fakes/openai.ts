/**
 * A fake OpenAI-compatible chat-completions server for tests. It speaks the
 * real wire format (HTTP + SSE `data:` lines) on 127.0.0.1, answers each
 * request with the next scripted Reply, and records what it received.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A body part: text or bytes to write, or a pause in ms before the next part. */
export type Part = string | Buffer | { pause: number };

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body?: Part[];
  /** Send nothing at all, not even headers: the client sees a hung server. */
  noHeaders?: boolean;
  /** After the body, keep the response open instead of ending it. */
  hang?: boolean;
  /** After the body, close the connection without finishing the response. */
  reset?: boolean;
}

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body. */
  body: any;
  at: number;
  /** True once the client closed the connection before the reply was complete. */
  closedByClient: boolean;
  /** Resolves when the exchange is over, either way. */
  closed: Promise<void>;
}

export const sse = {
  event: (data: unknown): string => `data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`,
  done: "data: [DONE]\n\n",
  /** A chat.completion.chunk with one choice. */
  chunk: (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) =>
    sse.event({
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      created: 1,
      model: "fake",
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...extra,
    }),
};

const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };

/** Streams `pieces` as content deltas (optionally pausing between them), then stop and [DONE]. */
export function textReply(pieces: string[], opts: { pauseMs?: number; done?: boolean } = {}): Reply {
  const body: Part[] = [sse.chunk({ role: "assistant", content: "" })];
  for (const p of pieces) {
    if (opts.pauseMs) body.push({ pause: opts.pauseMs });
    body.push(sse.chunk({ content: p }));
  }
  body.push(sse.chunk({}, "stop"));
  if (opts.done !== false) body.push(sse.done);
  return { headers: SSE_HEADERS, body };
}

export interface FakeToolCall {
  id?: string;
  name: string;
  arguments: string;
}

/** Streams tool calls the way OpenAI does: name first, then argument fragments, keyed by index. */
export function toolCallReply(calls: FakeToolCall[], opts: { omitIds?: boolean; fragment?: number; text?: string } = {}): Reply {
  const body: Part[] = [sse.chunk({ role: "assistant", content: opts.text ?? null })];
  calls.forEach((c, index) => {
    const id = opts.omitIds ? {} : { id: c.id ?? `call_${index}` };
    body.push(sse.chunk({ tool_calls: [{ index, ...id, type: "function", function: { name: c.name, arguments: "" } }] }));
    const size = opts.fragment ?? 4;
    for (let i = 0; i < c.arguments.length; i += size) {
      body.push(sse.chunk({ tool_calls: [{ index, function: { arguments: c.arguments.slice(i, i + size) } }] }));
    }
  });
  body.push(sse.chunk({}, "tool_calls"), sse.done);
  return { headers: SSE_HEADERS, body };
}

/** A non-streamed chat.completion (what a request with stream: false gets), answering `text`. */
export function completionReply(text: string, model = "fake-model"): Reply {
  const body = {
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: text ? "length" : "stop" }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  };
  return { headers: { "content-type": "application/json" }, body: [JSON.stringify(body)] };
}

export function statusReply(status: number, headers: Record<string, string> = {}, body = ""): Reply {
  return { status, headers: { "content-type": "application/json", ...headers }, body: body ? [body] : [] };
}

/** A raw SSE body, for malformed or unusual streams. */
export function rawReply(body: Part[], headers: Record<string, string> = SSE_HEADERS): Reply {
  return { headers, body };
}

export class FakeOpenAi {
  readonly requests: RecordedRequest[] = [];
  /**
   * What GET /v1/models lists, as OpenAI-compatible servers do. Answered
   * without taking a scripted reply, and kept out of `requests`; the calls
   * are counted in `modelListCalls`.
   */
  models: string[] = ["fake-model"];
  modelListCalls = 0;
  /**
   * When the queue is empty, the reply is computed from the request instead
   * (a model that asks for tools and reads their results: see toolUsingModel).
   */
  responder: ((body: any) => Reply) | undefined;
  private readonly queue: Reply[] = [];
  /**
   * What POST /v1/audio/transcriptions answers, in order (`{"text": ...}`);
   * when empty, "fake transcription". Each request is recorded in
   * `transcriptions` with its multipart fields and file.
   */
  readonly transcripts: Array<string | Reply> = [];
  readonly transcriptions: Array<{
    headers: IncomingHttpHeaders;
    model: string | undefined;
    responseFormat: string | undefined;
    file: { name: string; type: string; data: Buffer } | undefined;
  }> = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private waiters: Array<() => void> = [];

  private constructor(private readonly server: Server) {}

  static async start(): Promise<FakeOpenAi> {
    let fake!: FakeOpenAi;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const raw = Buffer.concat(chunks);
        if (/\/audio\/transcriptions\/?(\?.*)?$/.test(req.url ?? "")) void fake.transcribe(req.method ?? "", req.url ?? "", req.headers, raw, res);
        else void fake.handle(req.method ?? "", req.url ?? "", req.headers, raw.toString("utf8"), res);
      });
    });
    fake = new FakeOpenAi(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return fake;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  /** Replies are used in order, one per request; an unscripted request gets a 500 that says so. */
  enqueue(...replies: Reply[]): this {
    this.queue.push(...replies);
    return this;
  }

  async waitForRequests(n: number): Promise<void> {
    while (this.requests.length < n) await new Promise<void>((r) => this.waiters.push(r));
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.timers.delete(t);
        resolve();
      }, ms).unref();
      this.timers.add(t);
    });
  }

  /** The OpenAI transcription endpoint: multipart `file` + `model`, as OpenAI checks them (400 without either). */
  private async transcribe(method: string, url: string, headers: IncomingHttpHeaders, raw: Buffer, res: ServerResponse): Promise<void> {
    const bad = (message: string) => {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message, type: "invalid_request_error" } }));
    };
    if (method !== "POST" || !String(headers["content-type"] ?? "").startsWith("multipart/form-data")) return bad("Expected a multipart/form-data POST.");
    let form: FormData;
    try {
      form = await new Request(`http://fake${url}`, {
        method,
        headers: { "content-type": String(headers["content-type"]) },
        body: new Uint8Array(raw),
      }).formData();
    } catch {
      return bad("Could not parse multipart form");
    }
    const file = form.get("file");
    const model = form.get("model");
    const rec = {
      headers,
      model: typeof model === "string" ? model : undefined,
      responseFormat: typeof form.get("response_format") === "string" ? (form.get("response_format") as string) : undefined,
      file: file instanceof File ? { name: file.name, type: file.type, data: Buffer.from(await file.arrayBuffer()) } : undefined,
    };
    this.transcriptions.push(rec);
    for (const w of this.waiters.splice(0)) w();
    if (!rec.file) return bad("1 validation error: file field required");
    if (!rec.model) return bad("you must provide a model parameter");
    const next = this.transcripts.shift() ?? "fake transcription";
    if (typeof next !== "string") {
      res.writeHead(next.status ?? 200, next.headers ?? { "content-type": "application/json" });
      for (const part of next.body ?? []) if (typeof part === "string" || Buffer.isBuffer(part)) res.write(part);
      res.end();
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ text: next }));
  }

  /** OpenAI refuses malformed content parts with 400; a well-formed image part is an image_url with a data: or http(s) URL. */
  private badContent(body: unknown): string | undefined {
    const messages = (body as { messages?: unknown })?.messages;
    if (!Array.isArray(messages)) return undefined;
    for (const [i, m] of messages.entries()) {
      const content = (m as { content?: unknown }).content;
      if (!Array.isArray(content)) continue;
      if ((m as { role?: unknown }).role !== "user") return `messages[${i}]: only user messages may have content parts here`;
      for (const [j, p] of content.entries()) {
        const part = p as { type?: unknown; text?: unknown; image_url?: { url?: unknown } };
        if (part.type === "text" && typeof part.text === "string") continue;
        if (
          part.type === "image_url" &&
          typeof part.image_url?.url === "string" &&
          /^(data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+|https?:\/\/)/.test(part.image_url.url)
        )
          continue;
        return `Invalid content part messages[${i}].content[${j}]`;
      }
    }
    return undefined;
  }

  private async handle(method: string, url: string, headers: IncomingHttpHeaders, raw: string, res: ServerResponse): Promise<void> {
    if (method === "GET" && /\/models\/?(\?.*)?$/.test(url)) {
      this.modelListCalls++;
      const list = { object: "list", data: this.models.map((id) => ({ id, object: "model", created: 0, owned_by: "fake" })) };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(list));
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      body = raw;
    }
    let markClosed!: () => void;
    const rec: RecordedRequest = { method, url, headers, body, at: Date.now(), closedByClient: false, closed: new Promise<void>((r) => (markClosed = r)) };
    res.on("close", () => {
      if (!res.writableFinished) rec.closedByClient = true;
      markClosed();
    });
    this.requests.push(rec);
    for (const w of this.waiters.splice(0)) w();
    const invalid = this.badContent(body);
    if (invalid) {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: invalid, type: "invalid_request_error" } }));
      return;
    }

    const reply =
      this.queue.shift() ?? this.responder?.(body) ?? statusReply(500, {}, JSON.stringify({ error: { message: "fake server: no scripted reply left" } }));
    if (reply.noHeaders) return;
    res.writeHead(reply.status ?? 200, reply.headers ?? SSE_HEADERS);
    res.flushHeaders();
    for (const part of reply.body ?? []) {
      if (res.destroyed) return;
      if (typeof part === "string" || Buffer.isBuffer(part)) res.write(part);
      else await this.pause(part.pause);
    }
    if (reply.reset)
      res.socket?.end(); // flushes what was written, then closes mid-response
    else if (!reply.hang && !res.destroyed) res.end();
  }
}

/**
 * A model for scenarios: a user message containing `trigger` makes it call
 * `tool` (arguments `args`); a tool result makes it answer "the tool said:
 * <result>"; anything else is answered `echo: <text>` like the echo agent.
 */
export function toolUsingModel(opts: { trigger: string; tool: string; args?: string }): (body: any) => Reply {
  return (body) => {
    const messages: Array<{ role: string; content: string | null }> = body?.messages ?? [];
    const last = messages.at(-1);
    if (last?.role === "tool") return textReply([`the tool said: ${last.content ?? ""}`]);
    const user = [...messages].reverse().find((m) => m.role === "user")?.content ?? "";
    if (user.includes(opts.trigger))
      return toolCallReply([{ id: `call_${Math.random().toString(36).slice(2, 10)}`, name: opts.tool, arguments: opts.args ?? "{}" }]);
    return textReply([`echo: ${user}`]);
  };
}
