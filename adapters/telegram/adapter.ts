/**
 * The Telegram adapter: getMe, the command menu, inbound by long polling
 * (polling.ts) or webhook (webhook.ts), outbound through the sink (sink.ts).
 *
 * Two grammY Api clients share the token: one for long polling, whose
 * request timeout must outlast the poll, and one for every other call, whose
 * timeout is short so a hung request cannot hold a chat's reply queue for
 * minutes. Neither has auto-retry installed: see errors.ts.
 */
import { Api } from "grammy";
import { telegramFormat } from "./format.js";
import type { Update } from "grammy/types";
import { registerSecret, type Logger } from "../../src/log.js";
import { AdapterError, AdapterSetupError, type Adapter, type AdapterContext, type AdapterHealth, type AdapterSink } from "../types.js";
import { TELEGRAM_LIMITS } from "./limits.js";
import { syncCommands } from "./commands.js";
import { toAdapterError } from "./errors.js";
import { botIdFromToken, PLATFORM } from "./ids.js";
import { chatMigrationOf, normalizeUpdate, type BotIdentity } from "./normalize.js";
import { LongPoller, type UpdateType } from "./polling.js";
import { createTelegramSink } from "./sink.js";
import { editTelegramCard, handleTelegramCallback, sendTelegramCard, sendTelegramCardPart, telegramCardParts } from "./approval-card.js";
import { telegramFiles } from "./files.js";
import type { FileSource } from "../types.js";
import { backoffMs, DEFAULT_BACKOFF, sleep, type Backoff } from "./util.js";
import { MAX_UPDATE_BYTES, createWebhookHandler, webhookPrecheck } from "./webhook.js";

export interface TelegramAdapterOptions {
  /** The bot token from @BotFather. Never logged. */
  token: string;
  /** Bot API root without trailing slash (grammY client.apiRoot); default https://api.telegram.org. */
  apiRoot?: string;
  /** Default 'polling'. */
  mode?: "polling" | "webhook";
  /** Required in webhook mode: Telegram sends it in X-Telegram-Bot-Api-Secret-Token. */
  webhookSecret?: string;
  /** Public URL Telegram should POST to; when set, start() calls setWebhook with it. */
  webhookUrl?: string;
  /** Defaults to ctx.log at start. */
  log?: Logger;
  /** How long Telegram holds an empty getUpdates, in seconds. Default 30. */
  pollingTimeoutSec?: number;
  /** Update types to receive. Default ['message']: the only type that starts a turn. */
  allowedUpdates?: string[];
  /** Backoff for getUpdates failures and inbound retries. Default 500 ms doubling to 30 s. */
  backoff?: Backoff;
  /** Timeout of every call but getUpdates, in seconds. Default 30. */
  requestTimeoutSec?: number;
}

const WEBHOOK_SECRET = /^[A-Za-z0-9_-]{1,256}$/;
/** getMe attempts at start before giving up on a transient failure. */
const GETME_ATTEMPTS = 3;

type State = "idle" | "starting" | "running" | "stopped";

export class TelegramAdapter implements Adapter {
  readonly platform = PLATFORM;
  readonly limits = TELEGRAM_LIMITS;
  readonly facts = { dmByUserId: true };
  readonly sink: AdapterSink;
  /** Markdown rendered for Telegram, then split at its limit (format.ts). */
  readonly format = telegramFormat;
  /** getFile, then <apiRoot>/file/bot<token>/<path> (files.ts). */
  readonly files: FileSource;

  private readonly api: Api;
  private readonly pollApi: Api;
  private readonly mode: "polling" | "webhook";
  private readonly backoff: Backoff;
  private id: string;
  private username: string | undefined;
  private state: State = "idle";
  private poller: LongPoller | undefined;
  private log: Logger | undefined;
  private readonly mounted = new WeakSet<object>();

  constructor(private readonly opts: TelegramAdapterOptions) {
    const token = opts.token?.trim() ?? "";
    if (!token) throw new AdapterSetupError("Config", "TelegramAdapter needs a bot token: set TELEGRAM_BOT_TOKEN to the token @BotFather gave you");
    registerSecret(token);
    this.mode = opts.mode ?? "polling";
    if (this.mode === "webhook") {
      if (!opts.webhookSecret || !WEBHOOK_SECRET.test(opts.webhookSecret))
        throw new AdapterSetupError("Config", "TELEGRAM_MODE=webhook needs TELEGRAM_WEBHOOK_SECRET: 1-256 characters of A-Z, a-z, 0-9, _ and -");
      registerSecret(opts.webhookSecret);
    }
    if (opts.apiRoot?.endsWith("/")) throw new AdapterSetupError("Config", "TELEGRAM_API_ROOT must not end with '/': remove the trailing slash");
    this.backoff = opts.backoff ?? DEFAULT_BACKOFF;
    // Known without a network call when the token has the usual <id>:<secret> shape; getMe confirms it.
    this.id = botIdFromToken(token) ?? "";
    const pollTimeout = opts.pollingTimeoutSec ?? 30;
    const client = (timeoutSeconds: number) => ({ timeoutSeconds, ...(opts.apiRoot !== undefined && { apiRoot: opts.apiRoot }) });
    this.api = new Api(token, client(opts.requestTimeoutSec ?? 30));
    this.pollApi = new Api(token, client(pollTimeout + 15));
    this.files = telegramFiles(this.api, token, opts.apiRoot);
    const sink = createTelegramSink(this.api, {
      botId: () => {
        if (!this.id) throw new AdapterError("telegram", "Unavailable", "the Telegram adapter does not know its bot id yet: call start() first");
        return this.id;
      },
    });
    this.sink = {
      ...sink,
      sendCard: (to, card) => sendTelegramCard(this.api, to, card),
      cardParts: telegramCardParts,
      sendCardPart: (to, card, i) => sendTelegramCardPart(this.api, to, card, i),
      editCard: (to, id, card) => editTelegramCard(this.api, to, id, card),
    };
  }

  get botId(): string {
    return this.id;
  }

  get botUsername(): string | undefined {
    return this.username;
  }

  private identity(): BotIdentity {
    return this.username === undefined ? { id: this.id } : { id: this.id, username: this.username };
  }

  async start(ctx: AdapterContext): Promise<void> {
    if (this.state === "starting" || this.state === "running")
      throw new AdapterSetupError("AlreadyStarted", "TelegramAdapter.start() called while already started: stop() it first");
    this.state = "starting";
    let log = this.opts.log ?? ctx.log;
    try {
      await this.identify(log);
      log = log.child({ platform: PLATFORM, botId: this.id });
      this.log = log;
      await syncCommands(this.api, ctx, this.id, log);
      if (this.mode === "webhook") await this.startWebhook(ctx, log);
      else await this.startPolling(ctx, log);
      // stop() may have been called while we were starting.
      if (this.state !== "starting") return;
      this.state = "running";
      log.info({ mode: this.mode, username: this.username }, "telegram adapter started");
    } catch (err) {
      if (this.state === "starting") this.state = "idle";
      throw err;
    }
  }

  private async identify(log: Logger): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const me = await this.api.getMe();
        if (this.id && String(me.id) !== this.id)
          log.warn({ tokenBotId: this.id, getMeId: me.id }, "telegram: getMe id differs from the token prefix; using getMe's");
        this.id = String(me.id);
        this.username = me.username;
        return;
      } catch (err) {
        const e = toAdapterError(err, "getMe");
        if (e.code !== "Transient" || attempt >= GETME_ATTEMPTS)
          throw new AdapterError("telegram", e.code === "Transient" ? "Unavailable" : e.code, `the Telegram adapter could not start: ${e.message}`, undefined, {
            cause: e,
          });
        log.warn({ err: { code: e.code, detail: e.message }, attempt }, "telegram getMe failed; retrying");
        await sleep(backoffMs(this.backoff, attempt));
      }
    }
  }

  private async startWebhook(ctx: AdapterContext, log: Logger): Promise<void> {
    const path = `/telegram/${this.id}`;
    if (!this.mounted.has(ctx)) {
      ctx.route(
        "POST",
        path,
        createWebhookHandler({
          secret: this.opts.webhookSecret!,
          bot: () => this.identity(),
          inbound: (env) => ctx.inbound(env),
          callback: (q) => handleTelegramCallback(this.api, q, ctx, log),
          migrated: (from, to) => ctx.chatMigrated?.(from, to) ?? Promise.resolve(),
          accepting: () => this.state === "running" || this.state === "starting",
          log,
          onError: (where, err) => ctx.reportError?.(where, err),
        }),
        // Public (Telegram sends the secret in a header, checked before the body is read).
        { public: true, maxBodyBytes: MAX_UPDATE_BYTES, precheck: webhookPrecheck(this.opts.webhookSecret!) },
      );
      this.mounted.add(ctx);
    }
    const url = this.opts.webhookUrl;
    if (!url) {
      log.info({ path }, "telegram webhook route mounted; TELEGRAM_WEBHOOK_URL is not set, so setWebhook is left to you");
      return;
    }
    if (!new URL(url).pathname.endsWith(path))
      log.warn({ path }, "telegram: TELEGRAM_WEBHOOK_URL does not end with the route path; make sure your proxy forwards it to that path");
    try {
      await this.api.setWebhook(url, {
        secret_token: this.opts.webhookSecret!,
        allowed_updates: this.allowedUpdates(),
      });
    } catch (err) {
      const e = toAdapterError(err, "setWebhook");
      throw new AdapterError(
        "telegram",
        e.code,
        `the Telegram adapter could not set its webhook: ${e.message}. Check TELEGRAM_WEBHOOK_URL (https, port 443/80/88/8443)`,
        e.retryAfterMs,
        { cause: e },
      );
    }
  }

  private async startPolling(ctx: AdapterContext, log: Logger): Promise<void> {
    try {
      // getUpdates is refused while a webhook is set. Pending updates are kept.
      await this.api.deleteWebhook({ drop_pending_updates: false });
    } catch (err) {
      log.warn(
        { err: { detail: toAdapterError(err, "deleteWebhook").message } },
        "telegram: deleteWebhook failed; getUpdates will fail while a webhook is set",
      );
    }
    const poller = new LongPoller({
      api: this.pollApi,
      timeoutSec: this.opts.pollingTimeoutSec ?? 30,
      allowedUpdates: this.allowedUpdates(),
      log,
      backoff: this.backoff,
      onError: (where, err) => ctx.reportError?.(where, err),
      ...(ctx.batch ? { batch: ctx.batch.bind(ctx) } : {}),
      deliver: async (update: Update) => {
        const migration = chatMigrationOf(update);
        if (migration) await ctx.chatMigrated?.(migration.from, migration.to);
        if (update.callback_query) return handleTelegramCallback(this.api, update.callback_query, ctx, log);
        const env = normalizeUpdate(update, this.identity(), (err) => {
          ctx.reportError?.("telegram-normalize", err);
          log.error(
            { updateId: update.update_id, err: err instanceof Error ? err.name : typeof err },
            "telegram: an update could not be normalized; confirmed and not answered",
          );
        });
        // No envelope (an edit, a service message, a type we do not handle):
        // nothing to record, so it is confirmed and never blocks the queue.
        if (env) await ctx.inbound(env);
      },
    });
    this.poller = poller;
    if (this.state === "starting") poller.start();
  }

  private allowedUpdates(): UpdateType[] {
    // edited_message: an edit updates the message's transcript entry.
    // callback_query: a press of an approval card's button.
    return (this.opts.allowedUpdates ?? ["message", "edited_message", "callback_query"]) as UpdateType[];
  }

  /** Polling stops (the last offsets confirmed); the sink keeps sending until the process exits. */
  stopIntake(): Promise<void> {
    return this.stop();
  }

  async stop(): Promise<void> {
    if (this.state !== "starting" && this.state !== "running") return;
    this.state = "stopped";
    const poller = this.poller;
    this.poller = undefined;
    await poller?.stop();
    this.log?.info("telegram adapter stopped");
  }

  health(): AdapterHealth {
    switch (this.state) {
      case "idle":
        return { ready: false, detail: "not started" };
      case "starting":
        return { ready: false, detail: "starting: waiting for getMe" };
      case "stopped":
        return { ready: false, detail: "stopped" };
      case "running":
        return this.poller ? this.poller.health() : { ready: true };
    }
  }
}
