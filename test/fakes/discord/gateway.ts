/**
 * The Discord gateway of the fake (v10, JSON encoding, no transport
 * compression): HELLO, IDENTIFY -> READY + GUILD_CREATE per guild of the
 * shard, heartbeat ACKs, RESUME with replay of everything after the client's
 * seq, RECONNECT / INVALID_SESSION, shard routing and intent filtering.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocket, WebSocketServer } from "ws";
import { ApplicationFlags, Intents, type DGatewayFrame } from "./types.js";
import { shardFor, type DiscordWorld } from "./world.js";

export interface GatewayOptions {
  token?: string;
  heartbeatIntervalMs: number;
  ackHeartbeats: boolean;
  gatewayUrl: () => string;
  resumeUrl: () => string;
  applicationId: string;
  /** The application's flags (see ApplicationFlags in types.ts): IDENTIFY with MessageContent needs one of its content bits. */
  applicationFlags: number;
}

interface Frame {
  op: number;
  d: unknown;
  s?: number | null;
  t?: string | null;
}

export interface GatewaySession {
  id: string;
  shardId: number;
  shardCount: number;
  intents: number;
  seq: number;
  history: Frame[];
  ws: WebSocket | null;
  ended: boolean;
  resumes: number;
  identify: Record<string, unknown>;
}

interface Connection {
  id: number;
  ws: WebSocket;
  url: string;
  session?: GatewaySession;
}

export interface ResumeRecord {
  sessionId: string;
  seq: number;
  replayed: number;
  connection: number;
  url: string;
  at: number;
}

const HISTORY_CAP = 2000;

export class DiscordGateway {
  readonly wss = new WebSocketServer({ noServer: true });
  sessions: GatewaySession[] = [];
  frames: DGatewayFrame[] = [];
  identifies: { connection: number; url: string; d: Record<string, unknown>; at: number }[] = [];
  resumes: ResumeRecord[] = [];
  heartbeats = 0;
  private conns = new Map<WebSocket, Connection>();
  private connSeq = 0;

  constructor(
    private readonly world: DiscordWorld,
    private readonly opts: GatewayOptions,
    private readonly notify: () => void,
  ) {
    this.wss.on("connection", (ws: WebSocket, req: IncomingMessage) => this.onConnection(ws, req));
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = new URL(req.url ?? "/", "http://x").pathname.replace(/\/$/, "");
    if (path !== "/gateway" && path !== "/gateway-resume") {
      socket.destroy();
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.wss.emit("connection", ws, req));
  }

  reset(): void {
    this.sessions = this.sessions.filter((s) => s.ws && !s.ended);
    this.frames = [];
    this.identifies = [];
    this.resumes = [];
    this.heartbeats = 0;
  }

  /** Connections currently open. */
  get connections(): number {
    return this.conns.size;
  }

  liveSessions(): GatewaySession[] {
    return this.sessions.filter((s) => !s.ended);
  }

  private onConnection(ws: WebSocket, req: IncomingMessage): void {
    const conn: Connection = { id: ++this.connSeq, ws, url: req.url ?? "/" };
    this.conns.set(ws, conn);
    const q = new URL(conn.url, "http://x").searchParams;
    ws.on("message", (raw) => this.onMessage(conn, raw.toString()));
    ws.on("close", (code) => {
      this.conns.delete(ws);
      const s = conn.session;
      if (s && s.ws === ws) {
        s.ws = null;
        // A client closing with 1000/1001 ends its session (Discord invalidates it).
        if (code === 1000 || code === 1001) s.ended = true;
      }
      this.notify();
    });
    ws.on("error", () => undefined);
    if (q.get("v") && q.get("v") !== "10") return ws.close(4012, "Invalid API version.");
    if ((q.get("encoding") && q.get("encoding") !== "json") || q.get("compress"))
      return ws.close(4002, "The fake gateway speaks encoding=json without transport compression.");
    this.send(conn, { op: 10, d: { heartbeat_interval: this.opts.heartbeatIntervalMs, _trace: ['["fake-gateway"]'] } });
    this.notify();
  }

  private send(conn: Connection, frame: Frame): void {
    if (conn.ws.readyState !== WebSocket.OPEN) return;
    conn.ws.send(JSON.stringify(frame));
    const rec: DGatewayFrame = { dir: "out", connection: conn.id, op: frame.op, at: Date.now() };
    if (frame.t) rec.t = frame.t;
    if (typeof frame.s === "number") rec.s = frame.s;
    this.frames.push(rec);
  }

  private onMessage(conn: Connection, raw: string): void {
    let p: Frame;
    try {
      p = JSON.parse(raw) as Frame;
    } catch {
      return conn.ws.close(4002, "Error while decoding payload.");
    }
    this.frames.push({ dir: "in", connection: conn.id, op: p.op, at: Date.now() });
    switch (p.op) {
      case 1:
        this.heartbeats++;
        if (this.opts.ackHeartbeats) this.send(conn, { op: 11, d: null });
        break;
      case 2:
        this.identify(conn, (p.d ?? {}) as Record<string, unknown>);
        break;
      case 6:
        this.resume(conn, (p.d ?? {}) as Record<string, unknown>);
        break;
      case 3:
      case 4:
      case 8:
        if (!conn.session) conn.ws.close(4003, "Not authenticated.");
        break;
      default:
        conn.ws.close(4001, "Unknown opcode.");
    }
    this.notify();
  }

  private identify(conn: Connection, d: Record<string, unknown>): void {
    if (conn.session) return conn.ws.close(4005, "Already authenticated.");
    if (this.opts.token !== undefined && d.token !== this.opts.token) return conn.ws.close(4004, "Authentication failed.");
    const shard = Array.isArray(d.shard) ? (d.shard as number[]) : [0, 1];
    const [shardId = 0, shardCount = 1] = shard;
    if (!(shardId >= 0 && shardId < shardCount)) return conn.ws.close(4010, "Invalid shard.");
    if (typeof d.intents !== "number") return conn.ws.close(4013, "Invalid intent(s).");
    // Discord closes with 4014 when a privileged intent is asked for that the application does not have enabled.
    if (
      (d.intents & Intents.MessageContent) !== 0 &&
      (this.opts.applicationFlags & (ApplicationFlags.GatewayMessageContent | ApplicationFlags.GatewayMessageContentLimited)) === 0
    )
      return conn.ws.close(4014, "Disallowed intent(s).");
    this.identifies.push({ connection: conn.id, url: conn.url, d, at: Date.now() });
    const session: GatewaySession = {
      id: randomBytes(16).toString("hex"),
      shardId,
      shardCount,
      intents: d.intents,
      seq: 0,
      history: [],
      ws: conn.ws,
      ended: false,
      resumes: 0,
      identify: d,
    };
    this.sessions.push(session);
    conn.session = session;
    const guilds = [...this.world.guilds.values()].filter((g) => shardFor(g.id, shardCount) === shardId);
    this.dispatchTo(session, "READY", {
      v: 10,
      user_settings: {},
      user: { ...this.world.bot, verified: true, mfa_enabled: false, flags: 0, email: null },
      guilds: guilds.map((g) => ({ id: g.id, unavailable: true })),
      session_id: session.id,
      session_type: "normal",
      resume_gateway_url: this.opts.resumeUrl(),
      shard: [shardId, shardCount],
      application: { id: this.opts.applicationId, flags: this.opts.applicationFlags },
      private_channels: [],
      relationships: [],
      presences: [],
      guild_join_requests: [],
      geo_ordered_rtc_regions: [],
      auth: {},
      _trace: ['["fake-gateway"]'],
    });
    for (const g of guilds) this.dispatchTo(session, "GUILD_CREATE", g.raw);
  }

  private resume(conn: Connection, d: Record<string, unknown>): void {
    const session = this.sessions.find((s) => s.id === d.session_id);
    const tokenOk = this.opts.token === undefined || d.token === this.opts.token;
    if (!session || session.ended || !tokenOk) {
      this.send(conn, { op: 9, d: false });
      return;
    }
    const old = session.ws;
    session.ws = conn.ws;
    conn.session = session;
    session.resumes++;
    if (old && old !== conn.ws && old.readyState === WebSocket.OPEN) old.close(4000, "Session resumed elsewhere.");
    const from = typeof d.seq === "number" ? d.seq : 0;
    const missed = session.history.filter((f) => (f.s ?? 0) > from);
    for (const f of missed) this.send(conn, f);
    this.resumes.push({ sessionId: session.id, seq: from, replayed: missed.length, connection: conn.id, url: conn.url, at: Date.now() });
    this.dispatchTo(session, "RESUMED", { _trace: ['["fake-gateway"]'] });
  }

  /** Sends (or, while the session is disconnected, buffers for RESUME) one dispatch. */
  dispatchTo(session: GatewaySession, t: string, d: unknown): void {
    const frame: Frame = { op: 0, s: ++session.seq, t, d };
    session.history.push(frame);
    if (session.history.length > HISTORY_CAP) session.history.shift();
    const conn = session.ws ? this.conns.get(session.ws) : undefined;
    if (conn) this.send(conn, frame);
    this.notify();
  }

  /**
   * Routes an event like Discord: guild events to the shard (guild_id >> 22) %
   * shard_count, everything else to shard 0; only to sessions with `intent`.
   * Returns how many sessions got (or buffered) it.
   */
  route(t: string, d: Record<string, unknown>, o: { guildId?: string; intent?: number } = {}): number {
    let n = 0;
    for (const s of this.liveSessions()) {
      const shard = o.guildId ? shardFor(o.guildId, s.shardCount) : 0;
      if (shard !== s.shardId) continue;
      if (o.intent !== undefined && (s.intents & o.intent) === 0) continue;
      this.dispatchTo(s, t, this.filterContent(s, t, d));
      n++;
    }
    return n;
  }

  /** Without MESSAGE_CONTENT, guild messages that do not mention the bot arrive without content. */
  private filterContent(s: GatewaySession, t: string, d: Record<string, unknown>): Record<string, unknown> {
    if (t !== "MESSAGE_CREATE" && t !== "MESSAGE_UPDATE") return d;
    if (!d.guild_id || (s.intents & Intents.MessageContent) !== 0) return d;
    const author = d.author as { id?: string } | undefined;
    const mentions = (d.mentions as { id: string }[] | undefined) ?? [];
    if (author?.id === this.world.bot.id || mentions.some((m) => m.id === this.world.bot.id)) return d;
    const out: Record<string, unknown> = { ...d, content: "", embeds: [], attachments: [], components: [] };
    // A forward's snapshot is message content too.
    if (Array.isArray(d.message_snapshots))
      out.message_snapshots = (d.message_snapshots as { message: Record<string, unknown> }[]).map((s) => ({
        message: { ...s.message, content: "", embeds: [], attachments: [], components: [] },
      }));
    return out;
  }

  /**
   * Drops connections. resumable (default): close code 4000 (or op 7
   * RECONNECT with `reconnectOpcode`); events dispatched meanwhile are
   * buffered and replayed on RESUME. Not resumable: op 9 INVALID_SESSION
   * (d:false) and the session ends, so the client must IDENTIFY again.
   */
  forceDisconnect(o: { resumable?: boolean; code?: number; reconnectOpcode?: boolean; shardId?: number } = {}): number {
    let n = 0;
    for (const s of this.liveSessions()) {
      if (o.shardId !== undefined && s.shardId !== o.shardId) continue;
      const ws = s.ws;
      const conn = ws ? this.conns.get(ws) : undefined;
      if (!ws || !conn) continue;
      s.ws = null;
      n++;
      if (o.resumable === false) {
        s.ended = true;
        this.send(conn, { op: 9, d: false });
      } else if (o.reconnectOpcode) this.send(conn, { op: 7, d: null });
      else ws.close(o.code ?? 4000, "Fake: forced disconnect");
    }
    this.notify();
    return n;
  }

  /** Asks every connected client for an immediate heartbeat (op 1). */
  requestHeartbeat(): void {
    for (const c of this.conns.values()) this.send(c, { op: 1, d: null });
  }

  async close(): Promise<void> {
    for (const ws of this.conns.keys()) ws.terminate();
    this.conns.clear();
    await new Promise<void>((r) => this.wss.close(() => r()));
  }
}
