import type { Agent } from "../agent/types.js";
import type { Logger } from "../log.js";
import { memoryScope } from "../session/memory-scope.js";
import type { Registry } from "../session/registry.js";
import type { Info } from "../session/info.js";
import type { KvStore } from "../store/kv.js";
import type { MemoryStore } from "../store/memories.js";
import type { MessageRecord, TranscriptStore } from "../store/transcript.js";
import type { LiveSession } from "./live-session.js";
import { errInfo } from "../log.js";

/** Turns a stretch of transcript into a few memory lines. */
export interface Condenser {
  /** `session`: whose transcript it is, so its own agent condenses it and its calls count against that session's agent and budgets (issue 29). */
  condense(messages: Array<Pick<MessageRecord, "role" | "content">>, session?: Info): Promise<string[]>;
}

const MAX_MEMORY_CHARS = 300;

/**
 * The deterministic condenser used with the echo agent (no model to ask):
 * it keeps the user's own statements, most recent last, trimmed.
 */
export function extractiveCondenser(maxItems = 5): Condenser {
  return {
    async condense(messages) {
      return messages
        .filter((m) => m.role === "user" && m.content.trim().length > 0 && !m.content.trim().startsWith("/"))
        .slice(-maxItems)
        .map((m) => `The user said: ${m.content.trim().replace(/\s+/g, " ").slice(0, MAX_MEMORY_CHARS)}`);
    },
  };
}

/** Asks the configured model to condense the transcript into short facts. */
export function agentCondenser(agent: (session?: Info) => Agent, timeoutMs = 60_000): Condenser {
  return {
    async condense(messages, session) {
      const transcript = messages
        .map((m) => `${m.role}: ${m.content}`)
        .join("\n")
        .slice(-20_000);
      const signal = AbortSignal.timeout(timeoutMs);
      let text = "";
      for await (const out of agent(session).run({
        system:
          "You maintain an assistant's long-term memory. From the conversation below, write at most 5 short, self-contained facts worth remembering about the user or the ongoing work, one per line, no numbering. Write nothing if nothing is worth keeping.",
        messages: [{ role: "user", content: transcript }],
        signal,
      })) {
        if (out.type === "done") {
          text = out.text;
          // Its usage is written before the review goes on, as a turn's is before its answer.
          await out.settled;
        }
      }
      return text
        .split("\n")
        .map((l) => l.replace(/^[-*\u2022\d.)\s]+/, "").trim())
        .filter(Boolean)
        .slice(0, 5)
        .map((l) => l.slice(0, MAX_MEMORY_CHARS));
    },
  };
}

export interface ReflectorOptions {
  registry: Registry;
  transcript: TranscriptStore;
  memories: MemoryStore;
  kv: KvStore;
  condenser: Condenser;
  /** Review after every N completed turns; 0 turns reflection off. */
  everyTurns: number;
  log?: Logger;
}

/**
 * Reflection: every N completed turns, when a rotation (/new) archives a
 * session, and on a periodic sweep over listForReview, condense what was
 * said since the last review into memory rows for the session's memory
 * scope. It runs in the background, one review at a time, and never delays
 * a reply. A failed review is logged; the session stays due, so the next
 * sweep retries it. What is due is read from the data (the transcript past
 * the session's review cursor), so nothing is lost with the process: an
 * archived session is found through its successor (`parentId`).
 */
export class Reflector {
  readonly #queue: string[] = [];
  readonly #queued = new Set<string>();
  #draining: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #stopped = false;
  failures = 0;

  constructor(readonly opts: ReflectorOptions) {}

  get enabled(): boolean {
    return this.opts.everyTurns > 0;
  }

  /** The Runner's onTurnCommitted hook. Never blocks. */
  onTurnCommitted = (session: LiveSession): void => {
    if (!this.enabled) return;
    if (session.info.turnCount > 0 && session.info.turnCount % this.opts.everyTurns === 0) this.enqueue(session.id);
  };

  /**
   * The Runner's onRotated hook: the session a rotation archived is reviewed
   * now, whatever its turn count, since no later turn will make it due.
   * Never blocks (the /new reply does not wait for the model).
   */
  onRotated = (previousId: string): void => {
    if (this.enabled) this.enqueue(previousId);
  };

  enqueue(sessionId: string): void {
    if (this.#stopped || this.#queued.has(sessionId)) return;
    this.#queued.add(sessionId);
    this.#queue.push(sessionId);
    this.#draining ??= this.#drain().finally(() => (this.#draining = null));
  }

  async #drain(): Promise<void> {
    await new Promise((r) => setImmediate(r)); // yield first: replies go out before any review starts
    for (let id = this.#queue.shift(); id !== undefined; id = this.#queue.shift()) {
      this.#queued.delete(id);
      try {
        await this.review(id);
      } catch (err) {
        this.failures++;
        this.opts.log?.warn({ sessionId: id, err: errInfo(err) }, "reflection failed; the next sweep retries it");
      }
    }
  }

  /** Waits for queued reviews (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  #key = (sessionId: string) => `reflection:${sessionId}`;

  /** Reviews one session now. Returns how many memories were written. */
  async review(sessionId: string): Promise<number> {
    const info = await this.opts.registry.getUnscoped(sessionId);
    const scope = memoryScope(info);
    const after = await this.#cursor(sessionId);
    const messages = await this.opts.transcript.since(sessionId, after, 400);
    if (messages.length === 0) return 0;
    const lines = await this.opts.condenser.condense(messages, info);
    // The memories and the cursor past them in one transaction: never the memories without the cursor (the next
    // review would write them again), nor the cursor without them (lost).
    await this.opts.memories.addReviewed(scope.write, sessionId, lines, { key: this.#key(sessionId), value: String(messages.at(-1)!.seq) });
    return lines.length;
  }

  /**
   * Queues every session with transcript newer than its last review, and
   * the archived predecessor of each (the session a /new rotated away from)
   * still holding unreviewed transcript: its review at the rotation may have
   * been lost (a restart right after /new, a failed model call).
   */
  async sweep(): Promise<number> {
    if (!this.enabled) return 0;
    const due = await this.opts.registry.listForReview({ limit: 200 });
    let n = 0;
    for (const s of due) {
      if (s.latestSeq > (await this.#cursor(s.id))) {
        this.enqueue(s.id);
        n++;
      }
      if (s.parentId && (await this.opts.transcript.since(s.parentId, await this.#cursor(s.parentId), 1)).length > 0) {
        this.enqueue(s.parentId);
        n++;
      }
    }
    return n;
  }

  /** The seq up to which a session was reviewed (0: never). */
  async #cursor(sessionId: string): Promise<number> {
    return Number((await this.opts.kv.get(this.#key(sessionId))) ?? 0);
  }

  start(intervalMs: number): void {
    if (!this.enabled || this.#timer) return;
    this.#timer = setInterval(() => {
      this.sweep().catch((err) => this.opts.log?.warn({ err: errInfo(err) }, "reflection sweep failed"));
    }, intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.idle();
  }
}
