/**
 * Holds Bolt's ack until the event is durably recorded.
 *
 * Bolt acks an Events API event before it runs any listener ("no data
 * expected"). Switchboard's rule is the reverse: ack only once ctx.inbound()
 * has recorded the event, so a crash between the ack and the record cannot
 * lose a message. So the receivers hand Bolt this gate's `ack`, which only
 * remembers the response; the receiver sends the real ack after
 * app.processEvent() resolves, and processEvent resolves only after the
 * listeners (which await ctx.inbound) have finished.
 */
import type { HttpResponse } from "../types.js";

export class AckGate {
  private response: unknown;
  private called = false;

  /** Bolt's AckFn. */
  readonly ack = async (response?: unknown): Promise<void> => {
    if (this.called) return;
    this.called = true;
    this.response = response;
  };

  get acked(): boolean {
    return this.called;
  }

  /** What Bolt asked to answer with (a slash command's ephemeral text), if anything. */
  get payload(): unknown {
    return this.response;
  }

  /** The HTTP answer: 200 with the ack payload, or an empty 200 (Slack only needs the status). */
  toHttp(): HttpResponse {
    const r = this.response;
    if (r === undefined || r === null || r === "") return { status: 200 };
    if (typeof r === "string") return { status: 200, headers: { "content-type": "text/plain; charset=utf-8" }, body: r };
    return { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(r) };
  }
}
