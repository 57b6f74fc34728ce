import type { Logger } from "../log.js";
import type { AdapterLimits, AdapterSink, FileSource, InboundEnvelope, Platform, ReplyFormat } from "./contract.js";
import type { ApprovalAction } from "../runtime/approvals/card.js";
import type { SlackInstallationStore, SlackOAuthStateStore } from "../store/index.js";

/** A button click on an approval card, as the adapter decoded it (decodeAction). */
export interface ApprovalClickInput {
  id: string;
  action: ApprovalAction;
  chatId: string;
  senderId: string;
  senderName?: string;
  /** The bot the click reached, for an adapter that serves several (Adapter.serves); else the adapter's botId. */
  botId?: string;
  /** The platform says the clicker administers this place (Slack: installed the app into this workspace). */
  senderAdministers?: boolean;
}

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
  /**
   * Mounts an HTTP route on the gateway's server (webhooks, Slack events).
   * A route is an operator route (token, Host allowlist) unless mounted
   * `public`: a webhook that authenticates by its own signature or secret.
   */
  route(method: "GET" | "POST", path: string, handler: HttpHandler, opts?: RouteOptions): void;
  /** Small durable facts (e.g. the hash of the last registered command list). */
  kv: { get(key: string): Promise<string | undefined>; set(key: string, value: string): Promise<void> };
  /** The chat commands to register with the platform (setMyCommands, application commands). */
  commands: ReadonlyArray<{ name: string; description: string }>;
  /**
   * Every chat command name and alias the gateway answers, operator-only
   * ones (approve) included: what an umbrella command (Slack's
   * `/switchboard <command>`) may stand for. Defaults to `commands`' names.
   */
  commandNames?: ReadonlyArray<string>;
  log: Logger;
  /**
   * Counts an event the adapter refused before it became an envelope (a
   * Slack event for another app: "foreign_app"), in /metrics as
   * switchboard_inbound_total{outcome=<reason>}.
   */
  dropped?(reason: string): void;
  /**
   * A group now lives under another chat id (Telegram upgraded it to a
   * supergroup). The gateway moves the group's identity to the new id, so
   * its session, memory, transcript and earlier sessions (/resume) follow.
   * Idempotent; resolves once durable, so the adapter may then confirm the
   * update that announced it.
   */
  chatMigrated?(fromChatId: string, toChatId: string): Promise<void>;
  /**
   * Counts an error the adapter caught on a correctness path (a normalizer
   * that threw, a record that failed and was answered non-2xx) in
   * switchboard_internal_errors_total{where}. The adapter logs it itself,
   * with its context.
   */
  reportError?(where: string, err: unknown): void;
  /**
   * A click on an approval card. Resolves with what to tell the clicker,
   * privately where the platform can (a Telegram alert, a Slack or Discord
   * ephemeral message); `ok: false` is a refusal that changed nothing.
   */
  approvalClick?(click: ApprovalClickInput): Promise<{ ok: boolean; text: string }>;
  /**
   * The Slack app's installations (many workspaces by OAuth): the ports the
   * Slack adapter reads tokens through, and what the gateway does when a
   * workspace uninstalls. Given to every adapter; only Slack's reads it.
   */
  slack?: SlackPorts;
}

/** What the Slack adapter reaches of the database, through ports (adapters never reach the store). */
export interface SlackPorts {
  installations: SlackInstallations;
  states: SlackOAuthStates;
  /** The database lock one process takes to refresh a rotating token (LeaseStore). */
  locks: { acquire(key: string, owner: string, ttlMs: number): Promise<boolean>; release(key: string, owner: string): Promise<void> };
  /**
   * A workspace (or, with teamId "", an org-wide install) uninstalled the app
   * and its installation is deleted: with SLACK_PURGE_ON_UNINSTALL, what the
   * gateway keeps of it is deleted too.
   */
  uninstalled?(install: { teamId: string; enterpriseId: string; botUserId: string }): Promise<void>;
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
  /** The caller is an operator: it carries OPERATOR_TOKEN, or it is a direct loopback request where loopback is trusted. */
  operator?: boolean;
  /** The peer's address as the socket has it (behind a proxy, the proxy's). */
  remoteAddress?: string;
}

export interface RouteOptions {
  /** Served without the operator check (webhooks that verify their own signature or secret, /healthz). */
  public?: boolean;
  /** The largest body accepted, counted while it streams (413 past it). Default: HttpServer's default. */
  maxBodyBytes?: number;
  /**
   * Checked on the headers before any of the body is read: a response here
   * (a missing or wrong webhook secret) refuses the request at once.
   */
  precheck?: (req: Omit<HttpRequest, "rawBody">) => HttpResponse | undefined;
  /**
   * The request gets its span (src/gateway/http/trace.ts) while telemetry is on: "webhook" starts a
   * new trace, "api" continues a caller's `traceparent`. Set by the gateway, not the adapters.
   */
  trace?: "webhook" | "api";
  /**
   * With `trace: "api"`: whether this request may continue its caller's
   * `traceparent` (it authenticates as an API caller). Anyone else's request
   * starts a trace of its own, so a stranger cannot put spans into a trace
   * of their choosing. Without it, no caller's trace is continued.
   */
  traceCaller?: (headers: Record<string, string | string[] | undefined>) => boolean;
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

/**
 * What the core asks of a platform that is not a rate or a size (those are
 * `AdapterLimits`): each adapter states it beside its limits, so no core
 * file keeps a list of platform names.
 */
export interface PlatformFacts {
  /** The bot can write to a person by the person's user id alone (Discord needs a DM channel opened first). */
  dmByUserId: boolean;
}

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
  readonly facts: PlatformFacts;
  readonly sink: AdapterSink;
  /**
   * Renders replies for the platform and splits them (adapters/<platform>/format.ts);
   * the sink then gets rendered chunks. Without it, replies are split as
   * plain text at limits.maxTextLength and sent as they are.
   */
  readonly format?: ReplyFormat;
  /**
   * A local operator channel (the web console): DM policy does not apply to
   * it. Platform adapters leave this unset.
   */
  readonly trusted?: boolean;
  /**
   * The platform's file endpoint: where an attachment's bytes are (and with
   * which credentials). The core downloads them, capped and timed
   * (src/runtime/media/), for vision models and transcription.
   */
  readonly files?: FileSource;
  /**
   * For an adapter that speaks as several bots at once (Slack installed in
   * many workspaces: one bot user per workspace): whether `botId` is one of
   * them. The adapter registry and the outbound door then find it by any of
   * its bots, and the door paces each bot on its own (a workspace's rate
   * budget is its own). Adapters with one bot leave it unset.
   */
  serves?(botId: string): boolean;
  /**
   * For a platform where the bot cannot leave one chat alone (Discord: a
   * bot leaves a channel's whole server, sink.leave): the other chat ids
   * that leaving `chatId` would also take the bot out of (the server's other
   * channels and threads), as envelopes would name them. GROUP_UNADMITTED=leave
   * leaves only if none of them is admitted. Resolves undefined when the
   * adapter cannot tell (the channel or its server is not known yet): the
   * gateway then does not leave. Adapters whose leave is of that chat
   * alone (Telegram, Slack) leave it unset.
   */
  leaveTakesAlso?(chatId: string): Promise<string[] | undefined>;
  start(ctx: AdapterContext): Promise<void>;
  /**
   * Graceful stop, first step: stop taking events from the platform
   * (polling, Socket Mode) while sending keeps working, so running turns and
   * queued replies can still go out; stop() follows. Adapters without it
   * keep receiving until stop(): what arrives meanwhile is recorded, and
   * answered after the restart. (HTTP routes answer 503 from then on.)
   */
  stopIntake?(): Promise<void>;
  /** Stops taking events, lets in-flight replies drain, and releases every connection. */
  stop(): Promise<void>;
  health(): AdapterHealth;
}

/**
 * The Slack app's installations in the database (SlackInstallationStore), as
 * the Slack adapter reaches them: through this port, never the store itself.
 * @slack/oauth's InstallationStore is built over it in adapters/slack.
 */
export type SlackInstallations = Pick<SlackInstallationStore, "save" | "find" | "delete" | "list" | "rotate">;
/** The install flow's use-once record of each OAuth `state` (SlackOAuthStateStore), as the Slack adapter reaches it. */
export type SlackOAuthStates = Pick<SlackOAuthStateStore, "issue" | "consume" | "prune" | "live">;
export type { SlackInstallationRecord, NewSlackInstallation, SlackInstallationKey, SlackInstallationSummary } from "../store/index.js";
