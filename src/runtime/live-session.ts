import type { Registry } from "../session/registry.js";
import type { Info } from "../session/info.js";
import { errors } from "../session/errors.js";
import type { TranscriptStore } from "../store/transcript.js";
import { EventStream } from "./event-stream.js";
import { speakerFromMeta, speakerName } from "./speaker.js";
import type { OutEvent, OutKind } from "./events.js";

export interface WindowMessage {
  role: "user" | "assistant" | "tool";
  content: string;
  /** A `tool` entry's call, decision and result as JSON (see tool-rounds.ts). */
  meta?: string;
  /** A user message's speaker (from the entry's meta); the turn gives it to the model in groups. */
  name?: string;
}

/**
 * The roles as the bundle's own strings: a row read from the store brings its own copy of
 * "assistant", 24-32 bytes in every entry of every live window (2,000 sessions of 40 entries).
 */
const ROLES: Readonly<Record<WindowMessage["role"], WindowMessage["role"]>> = { user: "user", assistant: "assistant", tool: "tool" };

function windowMessage(stored: WindowMessage["role"], content: string, meta: string | null): WindowMessage {
  const role = ROLES[stored];
  if (role === "tool") return meta ? { role, content, meta } : { role, content };
  const name = role === "user" ? speakerName(speakerFromMeta(meta)) : undefined;
  return name ? { role, content, name } : { role, content };
}

export interface ContextLimits {
  /** The agent sees at most this many recent messages... */
  maxMessages: number;
  /** ...and at most this many characters of them. */
  maxChars: number;
}

export const DEFAULT_CONTEXT: Readonly<ContextLimits> = Object.freeze({ maxMessages: 40, maxChars: 24_000 });

/** One frozen copy per limits object the runner hands out, shared by the sessions given it (a copy each was 184 bytes a live session). */
const frozenLimits = new WeakMap<ContextLimits, Readonly<ContextLimits>>();
function sharedLimits(given: ContextLimits): Readonly<ContextLimits> {
  const known = frozenLimits.get(given);
  if (known) return known;
  const frozen = Object.freeze({ ...given });
  frozenLimits.set(given, frozen);
  return frozen;
}

/** Freezes a value and everything it holds: what a session hands out cannot be written to. */
function deepFreeze<T>(v: T): T {
  if (v && typeof v === "object" && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/**
 * A session while it is live in this process: its Info, its durable metadata,
 * a bounded window of its transcript, its subscribers, and its generation.
 *
 * The generation fences agent runs: a run captures it at start, and rotation,
 * /stop or a switch bump it, after which nothing the old run emits is
 * delivered or persisted.
 *
 * Nothing it hands out is live: its Info (metadata included) is a frozen
 * copy, replaced whole on every change, and window() returns a copy of the
 * window's array, whose entries are frozen as they enter. So the copying
 * happens when the state changes (a metadata copy when it changes, one
 * array of at most CONTEXT_MAX_MESSAGES references per read), not per
 * getter call on the hot path.
 */
export class LiveSession {
  #info!: Info;
  readonly #limits: Readonly<ContextLimits>;
  #window: WindowMessage[] | null = null;
  #windowChars = 0;
  readonly #subscribers = new Set<EventStream>();
  #generation = 0;
  #closed = false;
  lastUsed = Date.now();

  constructor(
    info: Info,
    private readonly deps: { registry: Registry; transcript: TranscriptStore; context?: ContextLimits; publish?: (e: OutEvent) => void },
  ) {
    this.#set(info);
    this.#limits = deps.context ? sharedLimits(deps.context) : DEFAULT_CONTEXT;
  }

  /** Takes `next` as the session's Info: a frozen copy, its metadata copied and frozen unless it is the one already held. */
  #set(next: Info): void {
    const metadata = next.metadata === this.#info?.metadata ? next.metadata : deepFreeze(structuredClone(next.metadata));
    this.#info = Object.freeze({ ...next, metadata });
  }

  get id(): string {
    return this.#info.id;
  }
  get info(): Info {
    return this.#info;
  }
  get metadata(): Readonly<Record<string, unknown>> {
    return this.#info.metadata;
  }
  get generation(): number {
    return this.#generation;
  }
  get closed(): boolean {
    return this.#closed;
  }
  get limits(): Readonly<ContextLimits> {
    return this.#limits;
  }

  /** Invalidates every run started before now. */
  fence(): number {
    return ++this.#generation;
  }

  /** Live only, no replay; filtered by kind (none: every kind). Closed session: an already-closed stream. */
  subscribe(...kinds: OutKind[]): EventStream {
    if (this.#closed) return EventStream.closedStream();
    const s = new EventStream(kinds, (x) => this.#subscribers.delete(x));
    this.#subscribers.add(s);
    return s;
  }

  get subscriberCount(): number {
    return this.#subscribers.size;
  }

  /** Delivers to subscribers, then to the runner's sinks. */
  emit(e: OutEvent): void {
    if (this.#closed && e.kind !== "lifecycle") return;
    for (const s of this.#subscribers) s.push(e);
    this.deps.publish?.(e);
  }

  /** Persists one metadata value and emits a `properties` event. Archived sessions refuse (Archived). */
  async setMetadata(key: string, value: unknown): Promise<void> {
    if (this.#closed) throw errors.closed(`Session ${this.id}`);
    // Only this key is written: the others are whatever the store holds (another process may have set them).
    await this.deps.registry.setMetadata(this.id, { [key]: value });
    const metadata = { ...this.#info.metadata };
    if (value === undefined) delete metadata[key];
    else metadata[key] = value;
    this.#set({ ...this.#info, metadata });
    this.emit({ kind: "properties", sessionId: this.id, key, value });
  }

  /** Persists the persona and emits a `properties` event. */
  async setPersona(persona: string): Promise<void> {
    if (this.#closed) throw errors.closed(`Session ${this.id}`);
    await this.deps.registry.update(this.id, { persona });
    this.#set({ ...this.#info, persona });
    this.emit({ kind: "properties", sessionId: this.id, key: "persona", value: persona });
  }

  /**
   * Re-reads the session's row (metadata, persona, turn count): with several
   * processes on one database, another one may have changed them.
   */
  async reload(): Promise<void> {
    if (this.#closed) return;
    this.#set(await this.deps.registry.getUnscoped(this.id));
  }

  /** Updates the in-memory Info after a committed turn. */
  noteTurn(turnIncrement: number): void {
    this.#set({ ...this.#info, turnCount: this.#info.turnCount + turnIncrement, lastActive: new Date() });
    this.lastUsed = Date.now();
  }

  /** The bounded transcript window, loaded from the store on first use: a copy, of frozen entries. */
  async window(): Promise<ReadonlyArray<Readonly<WindowMessage>>> {
    if (this.#window === null) {
      const rows = await this.deps.transcript.recent(this.id, this.limits.maxMessages);
      this.#window = [];
      this.#windowChars = 0;
      this.remember(
        rows
          .filter((r) => r.role === "user" || r.role === "assistant" || r.role === "tool")
          .map((r) => windowMessage(r.role as WindowMessage["role"], r.content, r.meta)),
      );
    }
    // The window is loaded here, unless close() dropped it while the store was read.
    return this.#window ? this.#window.slice() : [];
  }

  /** Drops the cached window; the next turn reads it from the store (another process may have written). */
  invalidateWindow(): void {
    this.#window = null;
    this.#windowChars = 0;
  }

  /** How many messages the live window retains (bounded by the context limits). */
  get retainedMessages(): number {
    return this.#window?.length ?? 0;
  }

  /** Adds committed messages to the window, dropping the oldest past the limits. */
  remember(messages: WindowMessage[]): void {
    if (this.#window === null) return; // not loaded yet: the next load reads them from the store
    for (const m of messages) {
      // As a window read from the store holds it: meta only on a tool entry (a user entry's speaker is its name).
      this.#window.push(
        Object.freeze({ role: ROLES[m.role], content: m.content, ...(m.name && { name: m.name }), ...(m.meta && m.role === "tool" && { meta: m.meta }) }),
      );
      this.#windowChars += m.content.length;
    }
    const { maxMessages, maxChars } = this.limits;
    while (this.#window.length > maxMessages || (this.#windowChars > maxChars && this.#window.length > 1)) {
      this.#windowChars -= this.#window.shift()!.content.length;
    }
  }

  /** Idempotent. Subscribers' streams end. */
  close(): void {
    if (this.#closed) return;
    this.fence();
    this.emit({ kind: "lifecycle", sessionId: this.id, phase: "closed" });
    this.#closed = true;
    for (const s of [...this.#subscribers]) s.close();
    this.#window = null;
  }
}
