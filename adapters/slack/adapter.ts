/**
 * SlackAdapter: Bolt in HTTP mode (served on the gateway's one HTTP server)
 * or Socket Mode (when an app token is set), normalizing `message`,
 * `app_mention` and slash commands into envelopes, and a sink over the Web API.
 */
import { App, LogLevel, webApi } from "@slack/bolt";
import { slackFiles, type SlackFileInfo } from "./files.js";
import type { FileSource } from "../types.js";
import { SLACK_LIMITS } from "./limits.js";
import { slackFormat } from "./format.js";
import { registerSecret, type Logger } from "../../src/log.js";
import type { Adapter, AdapterContext, AdapterHealth, FileOrigin, ReplyAddress } from "../types.js";
import { AdapterError, AdapterSetupError } from "../types.js";
import { isSlackId } from "./ids.js";
import type { SlackIdentity } from "./normalize.js";
import { listenForMessages } from "./intake.js";
import { SlackHttpReceiver } from "./receiver.js";
import { boltLogger } from "./bolt-logger.js";
import { SlackSink, type SlackWebClient } from "./sink.js";
import type { SlackSocketReceiver } from "./socket.js";
import {
  editSlackCard,
  listenForApprovals,
  sendSlackCard,
  sendSlackCardPart,
  slackCardParts,
  type PendingPresses,
  type SlackCardClient,
} from "./approval-card.js";
import { identityFromContext, type Identify } from "./intake.js";
import { type Installed, isUnknownWorkspace, type SingleInstallation, startInstalled, unknownWorkspace } from "./installed.js";
import { listenForUninstalls } from "./uninstall.js";
import { decodeReplyAddress } from "./ids.js";
import type { SlackWorkspaces, WorkspaceRef } from "./workspaces.js";
import { whoAmI } from "./bot-identity.js";
import { mountRoutes } from "./http-routes.js";
import type { SlackAdapterOptions } from "./options.js";

export class SlackAdapter implements Adapter {
  readonly platform = "slack" as const;
  readonly limits = SLACK_LIMITS;
  readonly facts = { dmByUserId: true };
  readonly sink: SlackSink;
  /** Markdown rendered for Slack, then split at its limit (format.ts). */
  readonly format = slackFormat;
  /** url_private with the bot token, on Slack's file host (files.ts). */
  readonly files: FileSource;
  private client: webApi.WebClient | undefined;
  /** Installs by OAuth: every workspace's installation (undefined with one token). */
  private workspaces: SlackWorkspaces | undefined;
  private installed: Installed | undefined;
  private app: App | undefined;
  /** Approval presses acked and still being decided (stop() waits for them). */
  private presses: PendingPresses | undefined;
  private me: SlackIdentity | undefined;
  private username: string | undefined;
  private socketConnected = false;
  private running = false;
  private log: Logger | undefined;

  constructor(private readonly o: SlackAdapterOptions) {
    if (!o.botToken && !o.oauth)
      throw new AdapterSetupError(
        "Config",
        "SlackAdapter needs a bot token (xoxb-…): set SLACK_BOT_TOKEN, or SLACK_CLIENT_ID and the OAuth settings to install it into workspaces",
      );
    if (!o.appToken && !o.signingSecret)
      throw new AdapterSetupError(
        "Config",
        "SlackAdapter needs SLACK_SIGNING_SECRET for HTTP mode (from the app's Basic Information page), or SLACK_APP_TOKEN for Socket Mode",
      );
    this.serves = o.oauth ? (botId) => isSlackId(botId) : undefined;
    for (const s of [o.botToken, o.appToken, o.signingSecret, o.oauth?.clientSecret, o.oauth?.stateSecret, o.oauth?.installToken]) registerSecret(s);
    this.sink = new SlackSink(
      (t) => this.clientOf(t) as Promise<SlackWebClient>,
      () => this.log,
    );
    this.sink.sendCard = async (to, card) => sendSlackCard((await this.clientOf(cardTarget(to))) as unknown as SlackCardClient, to, card);
    this.sink.cardParts = slackCardParts;
    this.sink.sendCardPart = async (to, card, i) => sendSlackCardPart((await this.clientOf(cardTarget(to))) as unknown as SlackCardClient, to, card, i);
    this.sink.editCard = async (to, id, card) => editSlackCard((await this.clientOf(cardTarget(to))) as unknown as SlackCardClient, to, id, card);
    this.files = slackFiles(async (from) => (this.workspaces ? this.workspaces.token(workspaceOfOrigin(from)) : o.botToken), {
      ...(o.apiUrl !== undefined && { apiUrl: o.apiUrl }),
      info: async (file, from) => (await (await this.clientOf(workspaceOfOrigin(from))).files.info({ file }))?.file as SlackFileInfo | undefined,
    });
  }

  /** The Web API client for a workspace: the one token's, or its installation's. */
  private async clientOf(ref: WorkspaceRef): Promise<webApi.WebClient> {
    if (this.workspaces) return this.workspaces.client(ref);
    if (!this.client) throw new AdapterError("slack", "Unavailable", "the Slack adapter is not started; call start() first");
    return this.client;
  }

  /**
   * Installed by OAuth, the adapter speaks as each workspace's bot user
   * (Adapter.serves): the installation found by the reply's team decides.
   * With one token it is one bot, and leaves this unset.
   */
  readonly serves: ((botId: string) => boolean) | undefined;

  /** The bot's user id (U…), known after start(): what `<@…>` mentions name. */
  get botId(): string {
    return this.me?.botUserId ?? "";
  }
  get botUsername(): string | undefined {
    return this.username;
  }
  get teamId(): string | undefined {
    return this.me?.teamId;
  }
  get mode(): "socket" | "http" {
    return this.o.appToken ? "socket" : "http";
  }

  async start(ctx: AdapterContext): Promise<void> {
    if (this.running) throw new AdapterSetupError("AlreadyStarted", "SlackAdapter.start() called twice");
    const log = (this.o.log ?? ctx.log).child({ platform: "slack" });
    this.log = log;
    const slackLogger = boltLogger(log);
    const clientOptions = {
      ...(this.o.apiUrl !== undefined ? { slackApiUrl: this.o.apiUrl } : {}),
      // The gateway's scheduler is the one retry mechanism; see src/gateway/outbound/scheduler.ts.
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      logger: slackLogger,
    };
    if (this.o.botToken) {
      const client = new webApi.WebClient(this.o.botToken, clientOptions);
      const { me, username } = await whoAmI(client, log);
      this.client = client;
      this.me = me;
      this.username = username;
    }
    const receiver = await this.receiver(ctx, log, slackLogger);
    const common = {
      receiver,
      ...(this.o.appToken ? { socketMode: true, appToken: this.o.appToken } : {}),
      clientOptions,
      logger: slackLogger,
      logLevel: LogLevel.WARN,
    };
    let app: App;
    let identify: Identify;
    if (this.o.oauth) {
      const installed = await startInstalled(this.o.oauth, ctx, { log, clientOptions, apiUrl: this.o.apiUrl, single: this.singleInstallation() });
      this.installed = installed;
      this.workspaces = installed.workspaces;
      app = new App({ ...common, authorize: installed.workspaces.authorize as never });
      identify = identityFromContext;
      listenForUninstalls(app, installed, ctx, log);
    } else {
      const me = this.me!;
      app = new App({
        ...common,
        token: this.o.botToken!,
        botId: me.botId,
        botUserId: me.botUserId,
        // auth.test already ran above; Bolt need not repeat it.
        tokenVerificationEnabled: false,
      });
      identify = () => me;
    }
    app.error(async (err) => {
      if (isUnknownWorkspace(err)) return unknownWorkspace(err, ctx, log);
      log.warn({ err: err.code ?? err.name }, "a Slack event could not be recorded; it is not acked, so Slack redelivers it");
      throw err;
    });
    listenForMessages(app, ctx, identify, log);
    this.presses = listenForApprovals(app, ctx, identify, log);

    if (receiver instanceof SlackHttpReceiver) mountRoutes(ctx, receiver);
    this.app = app;
    await app.start();
    this.running = true;
    log.info({ mode: this.mode, teamId: this.me?.teamId, botId: this.me?.botUserId, installs: this.o.oauth ? "oauth" : "one token" }, "slack adapter started");
  }

  /** SLACK_BOT_TOKEN beside installs by OAuth: stored as one more installation. */
  private singleInstallation(): SingleInstallation | undefined {
    if (!this.o.botToken || !this.me) return undefined;
    return { token: this.o.botToken, me: this.me };
  }

  /** Socket Mode's receiver when an app token is set, else the HTTP receiver behind the gateway's routes. */
  private async receiver(ctx: AdapterContext, log: Logger, slackLogger: ReturnType<typeof boltLogger>): Promise<SlackSocketReceiver | SlackHttpReceiver> {
    if (!this.o.appToken) return new SlackHttpReceiver({ signingSecret: this.o.signingSecret!, log, onError: (where, err) => ctx.reportError?.(where, err) });
    // Imported only for Socket Mode: it loads @slack/socket-mode and undici 7, which HTTP mode never uses.
    const { SlackSocketReceiver } = await import("./socket.js");
    return new SlackSocketReceiver({
      appToken: this.o.appToken,
      logger: slackLogger,
      ...(this.o.apiUrl !== undefined ? { apiUrl: this.o.apiUrl } : {}),
      ...(this.o.socketReconnectMs !== undefined ? { clientPingTimeoutMs: this.o.socketReconnectMs } : {}),
      onState: (up) => (this.socketConnected = up),
      onRecordFailed: (err, retryNum) => {
        ctx.reportError?.("slack-socket-receiver", err);
        log.error(
          { retryNum, err: err instanceof Error ? { name: err.name, code: (err as { code?: unknown }).code } : typeof err },
          "a Slack Socket Mode envelope could not be recorded; it is left unacked so Slack delivers it again",
        );
      },
    });
  }

  /** Socket Mode disconnects (unacked envelopes are redelivered by Slack); the Web API client keeps sending. */
  stopIntake(): Promise<void> {
    return this.stop();
  }

  async stop(): Promise<void> {
    const app = this.app;
    this.running = false;
    this.app = undefined;
    await this.installed?.stop();
    if (!app) return;
    // Socket Mode's stop resolves before the close handshake, and an acked press may still wait on Slack: bounded, so shutdown never hangs on Slack.
    const stopped = app
      .stop()
      .catch(() => undefined)
      .then(() => this.presses?.settled());
    await Promise.race([stopped, new Promise<void>((r) => setTimeout(r, 3000).unref())]);
    this.socketConnected = false;
  }

  health(): AdapterHealth {
    if (!this.me && !this.installed) return { ready: false, detail: "not started (auth.test has not succeeded)" };
    if (!this.running) return { ready: false, detail: "stopped" };
    if (this.mode === "socket" && !this.socketConnected) return { ready: false, detail: "Socket Mode is not connected" };
    if (this.installed) return { ready: true, detail: `${this.mode} mode, installs by OAuth${this.installed.problems()}` };
    return { ready: true, detail: `${this.mode} mode, team ${this.me!.teamId}` };
  }
}

/** The workspace a card goes to, from its reply address (a bad address is the card sender's to refuse). */
function cardTarget(to: ReplyAddress): WorkspaceRef {
  const t = decodeReplyAddress(to);
  return "error" in t ? {} : { teamId: t.teamId, enterpriseId: t.enterpriseId };
}

/** The workspace a file was shared in, from its message's reply address. */
function workspaceOfOrigin(from: FileOrigin | undefined): WorkspaceRef {
  return { teamId: from?.extra?.teamId, enterpriseId: from?.extra?.enterpriseId };
}
