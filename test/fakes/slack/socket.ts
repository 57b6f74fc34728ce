/**
 * Socket Mode of the Slack fake: `apps.connections.open` hands out
 * ws://127.0.0.1:PORT/link/?ticket=...; on connect the fake sends `hello`,
 * then delivers envelopes (events_api, slash_commands, interactive) and
 * records the app's acks by envelope_id. Redelivery resends the same payload
 * in a new envelope with retry_attempt + 1, as Slack does after a missed ack.
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocket, WebSocketServer } from "ws";
import type { SlackAck, SlackEnvelope } from "./types.js";

interface Sent {
  envelope: SlackEnvelope;
  at: number;
  connection: number;
}

export class SlackSocketServer {
  readonly wss = new WebSocketServer({ noServer: true });
  readonly envelopes: Sent[] = [];
  readonly acks: SlackAck[] = [];
  /** Text frames from the app that were not acks. */
  readonly other: unknown[] = [];
  connectionsOpened = 0;
  private conns = new Map<WebSocket, number>();
  private pingTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly appId: string,
    private readonly notify: () => void,
    pingIntervalMs: number,
  ) {
    this.wss.on("connection", (ws: WebSocket) => this.onConnection(ws));
    if (pingIntervalMs > 0) {
      this.pingTimer = setInterval(() => {
        for (const ws of this.conns.keys()) if (ws.readyState === WebSocket.OPEN) ws.ping();
      }, pingIntervalMs);
      this.pingTimer.unref();
    }
  }

  /** A fresh Socket Mode URL (what apps.connections.open returns). */
  newUrl(base: string): string {
    return `${base.replace(/^http/, "ws")}/link/?ticket=${randomUUID()}&app_id=${this.appId}`;
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    if (!(req.url ?? "").startsWith("/link")) return false;
    this.wss.handleUpgrade(req, socket, head, (ws) => this.wss.emit("connection", ws, req));
    return true;
  }

  get openConnections(): number {
    return [...this.conns.keys()].filter((ws) => ws.readyState === WebSocket.OPEN).length;
  }

  private onConnection(ws: WebSocket): void {
    const id = ++this.connectionsOpened;
    this.conns.set(ws, id);
    ws.on("message", (raw, isBinary) => {
      if (isBinary) return;
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(raw.toString()) as Record<string, unknown>;
      } catch {
        this.other.push(raw.toString());
        return;
      }
      const envelopeId = msg.envelope_id;
      const sent = typeof envelopeId === "string" ? this.envelopes.find((e) => e.envelope.envelope_id === envelopeId) : undefined;
      if (sent) {
        const ack: SlackAck = { envelopeId: sent.envelope.envelope_id, type: sent.envelope.type, ms: Date.now() - sent.at, at: Date.now() };
        const payload = msg.payload as Record<string, unknown> | undefined;
        if (payload && Object.keys(payload).length) ack.payload = payload;
        this.acks.push(ack);
      } else this.other.push(msg);
      this.notify();
    });
    ws.on("close", () => {
      this.conns.delete(ws);
      this.notify();
    });
    ws.on("error", () => undefined);
    ws.send(
      JSON.stringify({
        type: "hello",
        num_connections: this.conns.size,
        debug_info: { host: "applink-fake", build_number: 1, approximate_connection_time: 18060 },
        connection_info: { app_id: this.appId },
      }),
    );
    this.notify();
  }

  private latest(): [WebSocket, number] {
    const open = [...this.conns.entries()].filter(([ws]) => ws.readyState === WebSocket.OPEN);
    const last = open.at(-1);
    if (!last) throw new Error("FakeSlack: no Socket Mode connection is open (did the app start in socketMode?)");
    return last;
  }

  send(
    type: string,
    payload: Record<string, unknown>,
    o: { acceptsResponsePayload?: boolean; retryAttempt?: number; retryReason?: string } = {},
  ): SlackEnvelope {
    const [ws, connection] = this.latest();
    const envelope: SlackEnvelope = {
      envelope_id: randomUUID(),
      type,
      payload,
      accepts_response_payload: o.acceptsResponsePayload ?? type !== "events_api",
    };
    if (type === "events_api") {
      envelope.retry_attempt = o.retryAttempt ?? 0;
      envelope.retry_reason = o.retryReason ?? "";
    }
    ws.send(JSON.stringify(envelope));
    this.envelopes.push({ envelope, at: Date.now(), connection });
    this.notify();
    return envelope;
  }

  /** Resends an envelope's payload in a new envelope with retry_attempt + 1. */
  redeliver(envelopeId: string, reason = "timeout"): SlackEnvelope {
    const prev = this.envelopes.find((e) => e.envelope.envelope_id === envelopeId);
    if (!prev) throw new Error(`FakeSlack: unknown envelope ${envelopeId}`);
    return this.send(prev.envelope.type, prev.envelope.payload, {
      acceptsResponsePayload: prev.envelope.accepts_response_payload,
      retryAttempt: (prev.envelope.retry_attempt ?? 0) + 1,
      retryReason: reason,
    });
  }

  /** Slack's `disconnect` message: the app should reconnect (apps.connections.open again). */
  requestDisconnect(reason = "refresh_requested"): void {
    for (const ws of this.conns.keys())
      if (ws.readyState === WebSocket.OPEN)
        ws.send(JSON.stringify({ type: "disconnect", reason, debug_info: { host: `applink-${randomBytes(3).toString("hex")}` } }));
  }

  unacked(): SlackEnvelope[] {
    return this.envelopes.filter((e) => !this.acks.some((a) => a.envelopeId === e.envelope.envelope_id)).map((e) => e.envelope);
  }

  reset(): void {
    this.envelopes.length = 0;
    this.acks.length = 0;
    this.other.length = 0;
  }

  /**
   * Closes connections with a close handshake (1001) and waits briefly, so an
   * app that is stopping sees a clean close instead of a 1006 error; then
   * terminates whatever is left.
   */
  async close(): Promise<void> {
    clearInterval(this.pingTimer);
    const closing = [...this.conns.keys()].map(
      (ws) =>
        new Promise<void>((resolve) => {
          if (ws.readyState === WebSocket.CLOSED) return resolve();
          ws.once("close", () => resolve());
          if (ws.readyState === WebSocket.OPEN) ws.close(1001, "Server shutting down");
        }),
    );
    await Promise.race([Promise.all(closing), new Promise((r) => setTimeout(r, 500).unref())]);
    for (const ws of this.conns.keys()) ws.terminate();
    this.conns.clear();
    await new Promise<void>((r) => this.wss.close(() => r()));
  }
}
