/**
 * Socket Mode: Bolt's SocketModeReceiver, with two changes.
 *
 * - Its own WebClient (the one that calls apps.connections.open) takes its
 *   options only from installerOptions.clientOptions, not from the App's
 *   clientOptions; without them it would call slack.com, and the Socket Mode
 *   client would fill a missing retryConfig with 100 retries. So the API URL
 *   and `retries: 0` are passed there explicitly.
 * - The ack is held until the event is recorded (see ack.ts): the receiver
 *   is initialised with a thin stand-in for the App whose processEvent gives
 *   Bolt a gate and sends the real ack only after processEvent resolves. If
 *   recording fails, nothing is acked and Slack redelivers the envelope.
 */
import { LogLevel, SocketModeReceiver, type App } from "@slack/bolt";
import type { Logger as SlackLogger } from "@slack/bolt";
import { AckGate } from "./ack.js";

export interface SocketReceiverOptions {
  appToken: string;
  apiUrl?: string;
  logger: SlackLogger;
  /** Reconnect delay after a lost connection (Bolt's default is 5 s). */
  clientPingTimeoutMs?: number;
  onState?: (connected: boolean) => void;
  /** Told when an envelope could not be recorded (it is left unacked: Slack redelivers it). */
  onRecordFailed?: (err: unknown, envelopeRetry: number | undefined) => void;
}

export class SlackSocketReceiver extends SocketModeReceiver {
  constructor(o: SocketReceiverOptions) {
    super({
      appToken: o.appToken,
      logger: o.logger,
      logLevel: LogLevel.WARN,
      ...(o.clientPingTimeoutMs !== undefined ? { clientPingTimeout: o.clientPingTimeoutMs } : {}),
      installerOptions: { clientOptions: { ...(o.apiUrl !== undefined ? { slackApiUrl: o.apiUrl } : {}), retryConfig: { retries: 0 } } },
      // Never ack an event that could not be recorded: Slack's redelivery is the retry.
      processEventErrorHandler: async ({ error, event }) => {
        o.onRecordFailed?.(error, (event as { retryNum?: number }).retryNum);
        return false;
      },
    });
    if (o.onState) {
      const on = o.onState;
      this.client.on("connected", () => on(true));
      this.client.on("disconnected", () => on(false));
      this.client.on("reconnecting", () => on(false));
    }
  }

  override init(app: App): void {
    const gated = {
      processEvent: async (event: Parameters<App["processEvent"]>[0]): Promise<void> => {
        const gate = new AckGate();
        await app.processEvent({ ...event, ack: gate.ack });
        await event.ack(gate.payload);
      },
    };
    super.init(gated as unknown as App);
  }
}
