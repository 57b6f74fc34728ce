import type { InboundEnvelope } from "../contract.js";

/**
 * Records in flight per conversation: an event's handling waits for the
 * records that started before it, so events delivered at once (concurrent
 * webhooks) are all recorded before the first of them can rotate the
 * session (see the arrival stamps in RotateInput.stampInbound).
 */
export class RecordsInFlight {
  readonly #recording = new Map<string, Set<Promise<unknown>>>();

  /** Awaits `recording`, counted as in flight for `conversation` until it settles. */
  async track<T>(conversation: string, recording: Promise<T>): Promise<T> {
    const inFlight = this.#recording.get(conversation) ?? new Set<Promise<unknown>>();
    this.#recording.set(conversation, inFlight);
    inFlight.add(recording);
    try {
      return await recording;
    } finally {
      inFlight.delete(recording);
      if (inFlight.size === 0 && this.#recording.get(conversation) === inFlight) this.#recording.delete(conversation);
    }
  }

  /** The records of this conversation still in flight (a later event's handling waits for them). */
  earlier(conversation: string): Promise<unknown> | undefined {
    const inFlight = this.#recording.get(conversation);
    return inFlight?.size ? Promise.allSettled([...inFlight]) : undefined;
  }

  get size(): number {
    return this.#recording.size;
  }
}

/**
 * What is stored of an incoming event: NUL removed (PostgreSQL text cannot
 * hold it; no chat platform means one), and only `maxChars` of text, with the
 * original length kept for the "too long" reply.
 */
export function storable(incoming: InboundEnvelope, maxChars: number): InboundEnvelope {
  const clean = incoming.text.includes("\u0000") ? { ...incoming, text: incoming.text.replace(/\u0000/g, "") } : incoming;
  return clean.text.length > maxChars ? { ...clean, text: cutText(clean.text, maxChars), textLength: clean.text.length } : clean;
}

/** The first `max` UTF-16 units, never ending on half a surrogate pair. */
function cutText(text: string, max: number): string {
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

/** Envelope JSON revived (dates), for replaying a recorded event after a restart. */
export function revive(json: string): InboundEnvelope {
  return JSON.parse(json, (k, v) => (k === "occurredAt" && typeof v === "string" ? new Date(v) : v));
}
