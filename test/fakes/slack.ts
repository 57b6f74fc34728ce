/**
 * FakeSlack: Slack's Web API, Events API delivery (signed HTTP requests) and
 * Socket Mode on 127.0.0.1 for tests.
 *
 *   const sl = new FakeSlack();
 *   await sl.start();
 *   const app = new App({ token: sl.botToken, signingSecret: sl.signingSecret,
 *     clientOptions: { slackApiUrl: sl.apiUrl, retryConfig: { retries: 0 } } });
 *
 * Web API: POST /api/<method>. Socket Mode: ws://127.0.0.1:PORT/link/ (from
 * apps.connections.open). Response URLs: /response/<id>. See
 * test/fakes/README.md.
 */
import { randomBytes } from "node:crypto";
import http from "node:http";
import { FaultPlan, HOST, Signal, closeServer, listen, parseBody, readBody, sendJson } from "./shared.js";
import { SlackEventBuilder, inferType, slackSignature } from "./slack/events.js";
import { SlackSocketServer } from "./slack/socket.js";
import {
  SlackApiError,
  type ResponseUrlPost,
  type SlackAck,
  type SlackCall,
  type SlackConversation,
  type SlackEnvelope,
  type SlackFault,
  type SlackHttpDelivery,
  type SlackIdentity,
  type SlackSentMessage,
  type SlackUser,
} from "./slack/types.js";
import { SlackWorld, createWebApi } from "./slack/webapi.js";
import { SlackFiles } from "./slack/files.js";
import { SlackOAuth } from "./slack/oauth.js";
import { SLACK_DEFAULT_SCOPES } from "../../src/config.js";
export type { SlackInstallGrant, IssuedToken } from "./slack/oauth.js";

export { mrkdwnView, type MrkdwnView } from "./slack/mrkdwn.js";
export * from "./slack/types.js";
export { SlackEventBuilder, nextTs, slackSignature, type MessageEventInput } from "./slack/events.js";

export interface FakeSlackOptions {
  /** The app's OAuth client id and secret, which oauth.v2.access checks. */
  oauth?: { clientId?: string; clientSecret?: string };
  botToken?: string;
  appToken?: string;
  signingSecret?: string;
  identity?: Partial<SlackIdentity>;
  /** Deliver the app's own chat.postMessage posts back as `message` events over Socket Mode, as Slack does. Default false. */
  echoOwnMessages?: boolean;
  /** Server pings on Socket Mode connections (ms, 0 = off). Default 5000. */
  pingIntervalMs?: number;
  /**
   * The bot token's granted scopes, sent as Slack does in the `x-oauth-scopes`
   * header of every Web API answer to an authenticated call. Default: the
   * scopes of the app manifest in the README (FakeSlack.MANIFEST_SCOPES).
   */
  scopes?: string[];
}

export interface PostEventOptions {
  /** Signing secret (default: the fake's). */
  secret?: string;
  /** X-Slack-Retry-Num / X-Slack-Retry-Reason headers, as on Slack's redeliveries. */
  retryNum?: number;
  retryReason?: string;
  /** X-Slack-Request-Timestamp in seconds (default now); the signature uses it. */
  timestamp?: number | string;
  /** Exact X-Slack-Signature to send instead of the computed one. */
  signature?: string;
}

export class FakeSlack {
  static readonly DEFAULT_BOT_TOKEN = "xoxb-0000000001-0000000002-fakeswitchboardbot";
  static readonly DEFAULT_APP_TOKEN = "xapp-1-A0FAKEAPP-0000000003-fakeswitchboardapp";
  static readonly DEFAULT_SIGNING_SECRET = "fake-signing-secret-0123456789abcdef";
  /** The scopes the app's manifest grants (switchboard slack manifest): what an installed bot token holds by default. */
  static readonly MANIFEST_SCOPES: readonly string[] = SLACK_DEFAULT_SCOPES;
  /** The scopes the bot token holds (see FakeSlackOptions.scopes); change it to model a reinstall. */
  scopes: string[];

  readonly botToken: string;
  readonly appToken: string;
  readonly signingSecret: string;
  readonly identity: SlackIdentity;
  /** Builders for event_callback bodies and slash command fields. */
  readonly events: SlackEventBuilder;
  readonly world: SlackWorld;

  private readonly server = http.createServer((req, res) => {
    this.handle(req, res).catch((err: unknown) => sendJson(res, 500, { ok: false, error: "fatal_error", detail: String(err) }));
  });
  private readonly signal = new Signal();
  private readonly faults = new FaultPlan<SlackFault>();
  private readonly socket: SlackSocketServer;
  private readonly methods: ReturnType<typeof createWebApi>;
  private readonly echoOwnMessages: boolean;
  private portNumber = 0;
  private callLog: SlackCall[] = [];
  private sentLog: SlackSentMessage[] = [];
  private httpDeliveries: SlackHttpDelivery[] = [];
  private responseLog: ResponseUrlPost[] = [];
  /**
   * Files users share: `sl.files.add({ name, mimetype, data })` gives the file
   * object to put in a message's `files` (`extra: { files: [f] }`); its
   * url_private needs the bot token and files:read. `sl.files.downloads`
   * records every GET of one.
   */
  readonly files: SlackFiles;
  /** The OAuth install flow: `sl.oauth.code(grant)` is what Slack puts on the redirect; oauth.v2.access exchanges it. */
  readonly oauth: SlackOAuth;
  /** Tokens revoked by `revoke` (an uninstall): calls with them answer token_revoked. */
  private readonly revoked = new Set<string>();

  constructor(opts: FakeSlackOptions = {}) {
    this.botToken = opts.botToken ?? FakeSlack.DEFAULT_BOT_TOKEN;
    this.appToken = opts.appToken ?? FakeSlack.DEFAULT_APP_TOKEN;
    this.signingSecret = opts.signingSecret ?? FakeSlack.DEFAULT_SIGNING_SECRET;
    this.scopes = [...(opts.scopes ?? FakeSlack.MANIFEST_SCOPES)];
    this.identity = {
      teamId: "T0FAKE001",
      teamName: "Fake Workspace",
      teamDomain: "fake-workspace",
      botUserId: "U0FAKEBOT",
      botId: "B0FAKEBOT",
      appId: "A0FAKEAPP",
      botName: "switchboard-test-bot",
      ...opts.identity,
    };
    this.echoOwnMessages = opts.echoOwnMessages ?? false;
    this.oauth = new SlackOAuth(this.identity.appId, opts.oauth);
    this.world = new SlackWorld(this.identity);
    const notify = (): void => this.signal.notify();
    this.events = new SlackEventBuilder(
      this.identity,
      (ch) => this.world.conversations.get(ch)?.type ?? inferType(ch),
      () => `${this.url}/response/${randomBytes(8).toString("hex")}`,
    );
    this.socket = new SlackSocketServer(this.identity.appId, notify, opts.pingIntervalMs ?? 5000);
    this.methods = createWebApi({
      world: this.world,
      sent: this.sentLog,
      socketUrl: () => this.socket.newUrl(this.url),
      posted: (channel, msg) => this.echo(channel, msg),
      changed: notify,
    });
    this.files = new SlackFiles(
      this.identity.teamId,
      this.identity.teamDomain,
      () => this.url,
      () => "U0FILEUSER",
    );
    this.methods["files.info"] = (p) => {
      const f = this.files.files.get(typeof p.file === "string" ? p.file : "");
      if (!f) throw new SlackApiError("file_not_found");
      return { file: f.object };
    };
    this.server.on("upgrade", (req, sock, head) => {
      if (!this.socket.handleUpgrade(req, sock, head)) sock.destroy();
    });
  }

  // ------------------------------------------------------------ installations

  /**
   * Event builders for another installation of the app, as `sl.oauth.code`
   * installs it: workspace `teamId` (its bot user `U<team>BOT`, bot `B<team>`
   * unless given). With `enterpriseId` the workspace is in that Enterprise Grid
   * org; with `orgWide` too, the app is installed org-wide (the org's bot
   * user, `U<enterprise>BOT`), and `teamId` is the workspace the events are in.
   */
  eventsFor(w: { teamId: string; enterpriseId?: string; orgWide?: boolean; botUserId?: string; botId?: string }): SlackEventBuilder {
    const key = w.orgWide && w.enterpriseId ? w.enterpriseId : w.teamId;
    const identity: SlackIdentity = {
      ...this.identity,
      teamId: w.teamId,
      teamName: `Team ${w.teamId}`,
      teamDomain: w.teamId.toLowerCase(),
      botUserId: w.botUserId ?? `U${key}BOT`,
      botId: w.botId ?? `B${key}`,
    };
    return new SlackEventBuilder(
      identity,
      (ch) => this.world.conversations.get(ch)?.type ?? inferType(ch),
      () => `${this.url}/response/${randomBytes(8).toString("hex")}`,
      w.enterpriseId ? { enterpriseId: w.enterpriseId, orgWide: w.orgWide === true } : undefined,
    );
  }

  /** Revokes every token issued for a team or org (the app was uninstalled there): calls with them answer token_revoked. */
  revoke(teamOrEnterprise: string): number {
    let n = 0;
    for (const [token, issued] of this.oauth.tokens)
      if (issued.grant.teamId === teamOrEnterprise || (issued.grant.isEnterpriseInstall && issued.grant.enterpriseId === teamOrEnterprise)) {
        this.revoked.add(token);
        n++;
      }
    return n;
  }

  /** The token each chat.postMessage to `channel` was made with, in order. */
  postTokens(channel?: string): Array<string | undefined> {
    return this.calls.filter((c) => c.method === "chat.postMessage" && (channel === undefined || c.params.channel === channel)).map((c) => c.token);
  }

  // ------------------------------------------------------------ lifecycle

  async start(): Promise<void> {
    this.portNumber = await listen(this.server);
  }

  async close(): Promise<void> {
    await this.socket.close();
    await closeServer(this.server);
  }

  /** Forgets calls, posts, envelopes, acks, deliveries, faults, users and conversations. */
  reset(): void {
    this.world.reset();
    this.socket.reset();
    this.faults.clear();
    this.callLog = [];
    this.sentLog.length = 0;
    this.httpDeliveries = [];
    this.responseLog = [];
  }

  get port(): number {
    return this.portNumber;
  }
  get url(): string {
    return `http://${HOST}:${this.portNumber}`;
  }
  /** For Bolt `clientOptions.slackApiUrl` (with the trailing slash). */
  get apiUrl(): string {
    return `${this.url}/api/`;
  }

  // ------------------------------------------------------------ world

  addUser(u: Partial<SlackUser> & { id: string }): SlackUser {
    const user: SlackUser = { name: u.id.toLowerCase(), ...u };
    this.world.users.set(user.id, user);
    return user;
  }
  addConversation(c: SlackConversation): SlackConversation {
    this.world.conversations.set(c.id, c);
    return c;
  }

  // ------------------------------------------------------------ Events API over HTTP

  private async signedPost(url: string, raw: string, contentType: string, o: PostEventOptions): Promise<SlackHttpDelivery> {
    const ts = String(o.timestamp ?? Math.floor(Date.now() / 1000));
    const headers: Record<string, string> = {
      "content-type": contentType,
      "x-slack-request-timestamp": ts,
      "x-slack-signature": o.signature ?? slackSignature(o.secret ?? this.signingSecret, ts, raw),
      "user-agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
    };
    if (o.retryNum !== undefined) {
      headers["x-slack-retry-num"] = String(o.retryNum);
      headers["x-slack-retry-reason"] = o.retryReason ?? "http_timeout";
    }
    const t0 = performance.now();
    const res = await fetch(url, { method: "POST", headers, body: raw });
    const ackMs = performance.now() - t0;
    const d: SlackHttpDelivery = { url, status: res.status, body: await res.text(), headers: Object.fromEntries(res.headers), ackMs, at: Date.now() };
    this.httpDeliveries.push(d);
    this.signal.notify();
    return d;
  }

  /** POSTs a JSON body (event_callback, url_verification, ...) signed like Slack. */
  postEvent(url: string, body: object, o: PostEventOptions = {}): Promise<SlackHttpDelivery> {
    this.world.noteEvent(body as Record<string, unknown>);
    return this.signedPost(url, JSON.stringify(body), "application/json", o);
  }

  /** POSTs slash command fields form-encoded and signed, like Slack does. */
  postCommand(url: string, fields: Record<string, string>, o: PostEventOptions = {}): Promise<SlackHttpDelivery> {
    return this.signedPost(url, new URLSearchParams(fields).toString(), "application/x-www-form-urlencoded", o);
  }

  /** POSTs an interactive payload (block_actions, view_submission, ...) as `payload=<json>`. */
  postInteraction(url: string, payload: object, o: PostEventOptions = {}): Promise<SlackHttpDelivery> {
    return this.signedPost(url, new URLSearchParams({ payload: JSON.stringify(payload) }).toString(), "application/x-www-form-urlencoded", o);
  }

  deliveries(): SlackHttpDelivery[] {
    return [...this.httpDeliveries];
  }

  // ------------------------------------------------------------ Socket Mode

  /** Sends an envelope on the newest Socket Mode connection (does not wait for the ack). */
  sendEnvelope(
    type: string,
    payload: Record<string, unknown>,
    o?: { acceptsResponsePayload?: boolean; retryAttempt?: number; retryReason?: string },
  ): SlackEnvelope {
    if (type === "events_api") this.world.noteEvent(payload);
    return this.socket.send(type, payload, o);
  }
  /** Delivers an event_callback body as an events_api envelope and resolves with the app's ack. */
  async deliverEvent(body: object, timeoutMs = 3000): Promise<SlackAck> {
    const env = this.sendEnvelope("events_api", body as Record<string, unknown>);
    return this.waitForAck(env.envelope_id, timeoutMs);
  }
  /** Delivers slash command fields as a slash_commands envelope; the ack may carry a response payload. */
  async deliverCommand(fields: Record<string, string>, timeoutMs = 3000): Promise<SlackAck> {
    const env = this.sendEnvelope("slash_commands", fields, { acceptsResponsePayload: true });
    return this.waitForAck(env.envelope_id, timeoutMs);
  }
  /** Same payload again in a new envelope with retry_attempt + 1 (what Slack does when an ack is late). */
  redeliver(envelopeId: string, reason = "timeout"): SlackEnvelope {
    return this.socket.redeliver(envelopeId, reason);
  }
  waitForAck(envelopeId: string, timeoutMs = 3000): Promise<SlackAck> {
    return this.waitFor(() => this.socket.acks.find((a) => a.envelopeId === envelopeId), timeoutMs);
  }
  acks(): SlackAck[] {
    return [...this.socket.acks];
  }
  envelopes(): SlackEnvelope[] {
    return this.socket.envelopes.map((e) => e.envelope);
  }
  unacked(): SlackEnvelope[] {
    return this.socket.unacked();
  }
  /** Sends Slack's `disconnect` message (reason refresh_requested, warning, ...). */
  requestDisconnect(reason?: string): void {
    this.socket.requestDisconnect(reason);
  }
  get socketConnections(): { open: number; opened: number } {
    return { open: this.socket.openConnections, opened: this.socket.connectionsOpened };
  }

  private echo(channel: string, msg: Record<string, unknown>): void {
    if (!this.echoOwnMessages || this.socket.openConnections === 0) return;
    const type = this.world.conversations.get(channel)?.type ?? inferType(channel);
    const { bot_profile: _p, ...event } = msg;
    this.sendEnvelope("events_api", this.events.callback({ ...event, channel, channel_type: type }) as unknown as Record<string, unknown>);
  }

  // ------------------------------------------------------------ faults

  /** The next `count` calls of `method` get HTTP 429, `Retry-After: retryAfter` and {ok:false,error:"ratelimited"}. */
  rateLimitNext(method: string, retryAfter = 1, count = 1): void {
    this.faults.add(method, { status: 429, error: "ratelimited", retryAfter }, count);
  }
  /**
   * The next `count` calls of `method` take effect (a chat.postMessage posts)
   * but answer HTTP `status` (default 500) with {ok:false, error}: what the
   * app sees when Slack did the work and the answer was lost (a timeout).
   */
  loseAnswerNext(method: string, o: { error?: string; status?: number } = {}, count = 1): void {
    this.faults.add(method, { status: o.status ?? 500, error: o.error ?? "internal_error", afterEffect: true }, count);
  }
  /** The next `count` calls of `method` answer {ok:false, error} (HTTP `status`, default 200 like Slack). */
  failNext(method: string, o: { error: string; status?: number }, count = 1): void {
    this.faults.add(method, { status: o.status ?? 200, error: o.error }, count);
  }

  // ------------------------------------------------------------ records

  /** Whether the bot left the channel (conversations.leave). */
  hasLeft(channel: string): boolean {
    return this.world.conversations.get(channel)?.left === true;
  }

  get calls(): readonly SlackCall[] {
    return this.callLog;
  }
  callsTo(method: string): SlackCall[] {
    return this.callLog.filter((c) => c.method === method);
  }
  /** Messages the app posted (chat.postMessage / postEphemeral), latest text plus history. */
  sent(filter?: { channel?: string; threadTs?: string }): SlackSentMessage[] {
    return this.sentLog.filter((s) => (!filter?.channel || s.channel === filter.channel) && (!filter?.threadTs || s.threadTs === filter.threadTs));
  }
  reactions(): { channel: string; timestamp: string; name: string; at: number }[] {
    return [...this.world.reactions];
  }
  /** Bodies the app POSTed to response_url endpoints (respond() in Bolt). */
  responses(): ResponseUrlPost[] {
    return [...this.responseLog];
  }

  waitFor<T>(predicate: () => T | undefined | null | false, timeoutMs = 3000): Promise<T> {
    return this.signal.waitFor(predicate, timeoutMs, () => {
      const calls = this.callLog.slice(-6).map((c) => `${c.method}->${c.response?.ok === false ? String(c.response.error) : (c.status ?? "?")}`);
      return `Web API: ${calls.join(", ") || "none"}. Envelopes ${this.socket.envelopes.length}, acks ${this.socket.acks.length}.`;
    });
  }
  waitForCall(method: string, pred: (c: SlackCall) => boolean = () => true, timeoutMs = 3000): Promise<SlackCall> {
    return this.waitFor(() => this.callsTo(method).find((c) => c.status !== undefined && pred(c)), timeoutMs);
  }

  // ------------------------------------------------------------ HTTP

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    if (req.method === "GET" && this.files.serve(req, res, url.pathname, (t) => t === this.botToken && this.scopes.includes("files:read"))) {
      this.signal.notify();
      return;
    }
    const raw = await readBody(req);
    const resp = /^\/response\/([A-Za-z0-9]+)$/.exec(url.pathname);
    if (resp) {
      const parsed = await parseBody(req, raw).catch(() => ({ params: { _raw: raw.toString() } as Record<string, unknown> }));
      const body = typeof parsed.params.payload === "string" ? (JSON.parse(parsed.params.payload) as Record<string, unknown>) : parsed.params;
      this.responseLog.push({ id: resp[1]!, body, at: Date.now() });
      sendJson(res, 200, { ok: true });
      this.signal.notify();
      return;
    }
    const m = /^\/api\/([A-Za-z0-9_.]+)$/.exec(url.pathname);
    if (!m) return sendJson(res, 404, { ok: false, error: "not_found" });
    const method = m[1]!;
    let params: Record<string, unknown>;
    try {
      params = (await parseBody(req, raw, url.searchParams)).params;
    } catch {
      return sendJson(res, 200, { ok: false, error: "invalid_json" });
    }
    const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? "")?.[1];
    const token = bearer ?? (typeof params.token === "string" ? params.token : undefined);
    delete params.token;
    const call: SlackCall = { method, params, contentType: (req.headers["content-type"] ?? "").split(";")[0]!, at: Date.now() };
    if (token) call.token = token;
    this.callLog.push(call);
    const answer = (status: number, body: Record<string, unknown>, headers?: Record<string, string>): void => {
      call.status = status;
      call.response = body;
      sendJson(res, status, body, headers);
      this.signal.notify();
    };
    const fault = this.faults.take(method);
    if (fault?.afterEffect) {
      try {
        this.methods[method]?.(params, token ?? "");
      } catch {
        // the failure below is the answer either way
      }
      return answer(fault.status, { ok: false, error: fault.error });
    }
    if (fault) {
      if (fault.status === 429) return answer(429, { ok: false, error: fault.error }, { "retry-after": String(fault.retryAfter ?? 1) });
      return answer(fault.status, { ok: false, error: fault.error });
    }
    // oauth.v2.access authenticates by the app's client id and secret, never a token.
    if (method === "oauth.v2.access") return this.answerOAuth(params, answer);
    const issued = token ? this.oauth.tokens.get(token) : undefined;
    if (method === "auth.test" && issued)
      return answer(200, { ok: true, ...this.oauth.authTest(issued) }, { "x-oauth-scopes": (issued.grant.scopes ?? []).join(",") });
    const fn = this.methods[method];
    if (!fn) return answer(200, { ok: false, error: "unknown_method" });
    const authError = this.checkToken(method, token);
    if (authError) return answer(200, { ok: false, error: authError });
    const scopes = { "x-oauth-scopes": token!.startsWith("xapp-") ? "connections:write" : this.scopes.join(",") };
    try {
      answer(200, { ok: true, ...fn(params, token!) }, scopes);
    } catch (err) {
      if (err instanceof SlackApiError) return answer(200, { ok: false, error: err.error, ...err.extra }, scopes);
      answer(500, { ok: false, error: "fatal_error", detail: String(err) });
    }
  }

  private answerOAuth(params: Record<string, unknown>, answer: (status: number, body: Record<string, unknown>) => void): void {
    try {
      answer(200, { ok: true, ...this.oauth.access(params) });
    } catch (err) {
      if (!(err instanceof SlackApiError)) throw err;
      answer(200, { ok: false, error: err.error });
    }
  }

  private checkToken(method: string, token: string | undefined): string | undefined {
    if (!token) return "not_authed";
    if (method === "apps.connections.open") {
      if (!token.startsWith("xapp-")) return "not_allowed_token_type";
      return token === this.appToken ? undefined : "invalid_auth";
    }
    if (token.startsWith("xapp-")) return "not_allowed_token_type";
    if (this.revoked.has(token)) return "token_revoked";
    return token === this.botToken || this.oauth.tokens.has(token) ? undefined : "invalid_auth";
  }
}
