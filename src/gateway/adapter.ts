import type { Logger } from "../log.js";
import type { AdapterLimits, AdapterSink, InboundEnvelope, Platform } from "./contract.js";

/**
 * What the gateway hands an adapter at start. Adapters never reach the store:
 * everything durable goes through these functions.
 */
export interface AdapterContext {
  /**
   * Hands one normalized inbound message to the gateway. Resolves once the
   * event is durably recorded (or found to be a duplicate), so the adapter
   * may then acknowledge it to the platform (confirm a Telegram offset, ack
   * a Slack envelope). The handling itself continues in the background.
   */
  inbound(env: InboundEnvelope): Promise<InboundResult>;
  /**
   * Runs `fn`, which hands several events to inbound() that the platform
   * delivered at once (one getUpdates batch, a burst on one channel): their
   * handling starts only once `fn` settles, so they all arrive before the
   * first of them is handled (several `/new` in a burst rotate once).
   */
  batch?<T>(fn: () => Promise<T>): Promise<T>;
  /** Mounts an HTTP route on the gateway's one server (webhooks, Slack events). */
  route(method: "GET" | "POST", path: string, handler: HttpHandler): void;
  /** Small durable facts (e.g. the hash of the last registered command list). */
  kv: { get(key: string): Promise<string | undefined>; set(key: string, value: string): Promise<void> };
  /** The chat commands to register with the platform (setMyCommands, application commands). */
  commands: ReadonlyArray<{ name: string; description: string }>;
  log: Logger;
}

export type InboundResult =
  /** Recorded; it will be handled (answered, or kept as context). */
  | { status: "accepted"; inboundId: string }
  /** Seen before (a platform retry or redelivery): dropped. */
  | { status: "duplicate" }
  /** Older than INBOUND_TTL: never answered. */
  | { status: "expired" }
  /** Dropped by policy (bot's own message, another bot, not allowed). */
  | { status: "ignored"; reason: string };

export interface HttpRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string | string[] | undefined>;
  /** The raw body, exactly as received (signature checks need the bytes). */
  rawBody: Buffer;
  query: URLSearchParams;
  params: Record<string, string>;
}

export interface HttpResponse {
  status: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /**
   * For long-lived responses (server-sent events): called with the raw
   * response after the status and headers are written; `body` is ignored.
   * Call `onClose` to learn when the client goes away.
   */
  stream?: (write: (chunk: string) => boolean, onClose: (fn: () => void) => void) => void;
}

export type HttpHandler = (req: HttpRequest) => Promise<HttpResponse>;

export interface AdapterHealth {
  ready: boolean;
  detail?: string;
}

/** A platform adapter: events in, calls out. */
export interface Adapter {
  readonly platform: Platform;
  /** The bot's id on its platform (the agent id). Known after start() for platforms that report it at login. */
  readonly botId: string;
  /** The bot's username, for `/cmd@name` and `@name` mentions, when the platform has one. */
  readonly botUsername?: string;
  readonly limits: AdapterLimits;
  readonly sink: AdapterSink;
  /**
   * A local operator channel (the web console): DM policy does not apply to
   * it. Platform adapters leave this unset.
   */
  readonly trusted?: boolean;
  start(ctx: AdapterContext): Promise<void>;
  /** Stops taking events, lets in-flight replies drain, and releases every connection. */
  stop(): Promise<void>;
  health(): AdapterHealth;
}
