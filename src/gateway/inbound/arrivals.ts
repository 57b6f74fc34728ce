import type { Logger } from "../../log.js";
import type { RunHandle, Runner } from "../../runtime/runner.js";
import type { InboundEnvelope } from "../contract.js";
import type { GatewayMetrics } from "../metrics.js";

interface Arrival {
  at: number;
  /** When the platform says it happened (epoch ms): a failing commit is retried until this plus INBOUND_TTL. */
  occurredAt: number;
  platform: string;
  chatKind: InboundEnvelope["chatKind"];
}

/** How a message that started no agent turn ended: a command, context kept in a group, or a reply of the access policy. */
export const handledWithoutTurn = (handle: RunHandle | undefined): string => (handle ? (handle.accepted === "consumed" ? "command" : "context") : "policy");

/**
 * Each in-flight inbound event: when it arrived and where from, for the turn
 * latency metric and the one info line per handled message.
 */
export class Arrivals {
  readonly #arrivals = new Map<string, Arrival>();

  constructor(private readonly log: Logger) {}

  add(inboundId: string, env: InboundEnvelope): void {
    this.#arrivals.set(inboundId, { at: performance.now(), occurredAt: env.occurredAt.getTime(), platform: env.platform, chatKind: env.chatKind });
  }

  has(inboundId: string): boolean {
    return this.#arrivals.has(inboundId);
  }

  /** Seconds since the event arrived, if it is tracked. */
  ageSeconds(inboundId: string): number | undefined {
    const a = this.#arrivals.get(inboundId);
    return a === undefined ? undefined : (performance.now() - a.at) / 1000;
  }

  /** When the event happened, while it is in flight. */
  occurredAt(inboundId: string): number | undefined {
    return this.#arrivals.get(inboundId)?.occurredAt;
  }

  forget(inboundId: string): void {
    this.#arrivals.delete(inboundId);
  }

  /**
   * One info line per handled message: where it came from, how it ended and
   * how long it took from arrival. Never its content.
   */
  handled(inboundId: string, outcome: string): void {
    const a = this.#arrivals.get(inboundId);
    if (!a) return;
    this.#arrivals.delete(inboundId);
    this.log.info({ platform: a.platform, chatKind: a.chatKind, outcome, latencyMs: Math.round(performance.now() - a.at), inboundId }, "message handled");
  }

  /** Each completed turn ends its events' tracking; the turn latency metric counts every turn but a fenced one. */
  observeTurns(runner: Runner, metrics: GatewayMetrics): void {
    runner.withSink(["turn-complete"], (_id, e) => {
      if (e.kind === "turn-complete") {
        for (const id of e.inboundIds ?? (e.inboundId ? [e.inboundId] : [])) {
          const age = this.ageSeconds(id);
          if (age !== undefined && e.outcome !== "fenced") metrics.turnLatency.observe(age);
          this.handled(id, e.outcome);
        }
      }
    });
  }

  get size(): number {
    return this.#arrivals.size;
  }
}
