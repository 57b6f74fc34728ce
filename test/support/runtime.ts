import { randomUUID } from "node:crypto";
import { echoAgent } from "../../src/agent/echo.js";
import { personas } from "../../src/agent/personas.js";
import type { Agent } from "../../src/agent/types.js";
import { commandInterceptor, parseCommand } from "../../src/runtime/commands/index.js";
import type { Conversation, InEvent, MessageEvent, OutEvent, ReplyAddress } from "../../src/runtime/events.js";
import { Runner } from "../../src/runtime/runner.js";
import type { RunnerOptions } from "../../src/runtime/runner-options.js";
import type { Info } from "../../src/session/info.js";
import { Registry } from "../../src/session/registry.js";
import { IdentityStore, MemoryStore, SessionStore, TranscriptStore } from "../../src/store/index.js";
import { openTestDb, type TestDb, type TestProvider } from "./db.js";

export interface TestRuntime {
  t: TestDb;
  registry: Registry;
  transcript: TranscriptStore;
  identities: IdentityStore;
  memories: MemoryStore;
  runner: Runner;
  /** Every event every sink saw, in order. */
  events: OutEvent[];
  close(): Promise<void>;
}

export async function makeRuntime(
  provider: TestProvider,
  opts: Partial<RunnerOptions> & { agent?: Agent | ((metadata: Record<string, unknown>) => Agent); commands?: boolean } = {},
): Promise<TestRuntime> {
  const t = await openTestDb(provider);
  const registry = new Registry(new SessionStore(t.db));
  const transcript = new TranscriptStore(t.db);
  const memories = new MemoryStore(t.db);
  const agent = opts.agent ?? echoAgent();
  const p = personas({ pirate: "Talk like a pirate.", coach: "Be encouraging." });
  const runner = new Runner({
    registry,
    transcript,
    memories,
    personas: p,
    agentFactory: typeof agent === "function" ? agent : () => agent,
    ...opts,
  });
  if (opts.commands !== false) runner.register(commandInterceptor({ transcript, personas: p }));
  const events: OutEvent[] = [];
  runner.withSink([], (_id, e) => {
    events.push(e);
  });
  return {
    t,
    registry,
    transcript,
    identities: new IdentityStore(t.db),
    memories,
    runner,
    events,
    async close() {
      await runner.close();
      await t.close();
    },
  };
}

export function privateChat(agentId = "bot"): Conversation & { chatId: string } {
  const chatId = String(Math.floor(Math.random() * 1e9));
  return { agentId, userId: randomUUID(), channel: `telegram:${agentId}:dm:${chatId}`, chatId };
}

export function message(conv: Conversation & { chatId?: string }, text: string, extra: Partial<MessageEvent> = {}): MessageEvent {
  const chatId = conv.chatId ?? "1";
  const replyTo: ReplyAddress = { platform: "telegram", botId: conv.agentId, chatId };
  return {
    type: "message",
    text,
    // Parsed once, as the gateway's dispatch does where it builds the event.
    command: parseCommand(text),
    respond: true,
    conversation: { agentId: conv.agentId, userId: conv.userId, groupId: conv.groupId, channel: conv.channel },
    origin: { platform: "telegram", chatId, senderId: "u1", userId: conv.userId },
    replyTo,
    receivedAt: new Date(),
    inboundId: randomUUID(),
    ...extra,
  } as MessageEvent;
}

/** Resolves the conversation's session at arrival and hands the event to the runner, as the gateway does. */
export async function send(rt: TestRuntime, conv: Conversation, ev: InEvent) {
  const info = await rt.registry.resolveChatChannel(conv);
  return rt.runner.run(rt.runner.open(info), ev);
}

export const notices = (events: OutEvent[]) => events.filter((e): e is Extract<OutEvent, { kind: "notice" }> => e.kind === "notice").map((e) => e.text);
export const finals = (events: OutEvent[]) => events.filter((e): e is Extract<OutEvent, { kind: "text-final" }> => e.kind === "text-final").map((e) => e.text);

/** An agent that streams `chunks` with a delay between them, honouring abort. */
/** Waits `ms`, or rejects with an AbortError as soon as `signal` aborts (as a real provider's request would). */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        reject(Object.assign(new Error("aborted"), { name: "AbortError" }));
      },
      { once: true },
    );
  });
}

export function slowAgent(chunks: string[], delayMs: number, onChunk?: (c: string) => void): Agent {
  return {
    name: "slow",
    async *run(req) {
      let text = "";
      for (const c of chunks) {
        await abortableSleep(delayMs, req.signal);
        onChunk?.(c);
        text += c;
        yield { type: "text-delta", text: c };
      }
      yield { type: "done", text, toolRounds: 0 };
    },
  };
}

export async function waitUntil(pred: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = "condition"): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A session's Info as the registry would hand it out, for code that takes one without reading the store (a turn's tools). */
export function sessionInfo(id: string = randomUUID()): Info {
  const at = new Date();
  return { id, agentId: "a", userId: "u", channel: "c", kind: "chat", metadata: {}, turnCount: 0, createdAt: at, lastActive: at, archived: false };
}
