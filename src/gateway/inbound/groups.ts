import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import type { Adapter } from "../adapter.js";
import type { InboundEnvelope } from "../contract.js";
import type { GatewayMetrics } from "../metrics.js";
import type { ReplyAddress } from "../../runtime/events.js";
import type { GroupPolicy } from "./policy.js";

/** Leaving a group is an item on the outbound door (src/gateway/outbound/items.ts): false where the platform cannot. */
interface LeaveDoor {
  enqueue(item: { kind: "leave"; to: ReplyAddress; chatId: string }): Promise<boolean>;
}

/** Groups remembered as already logged (and left); past this the oldest is forgotten, and logged again if it speaks again. */
const REMEMBERED_GROUPS = 1_000;

/**
 * What the gateway does about a message in a group it was not admitted to
 * (GROUP_POLICY): it is never answered; each is counted, the group is
 * logged once (not once per message: a busy group would flood the log), and
 * with GROUP_UNADMITTED=leave the bot leaves the group when addressed there.
 */
export class UnadmittedGroups {
  /** `platform:botId:chatId` -> whether the bot has left it; insertion order is age, so the oldest goes first. */
  readonly #noticed = new Map<string, boolean>();

  constructor(private readonly deps: { log: Logger; metrics: GatewayMetrics; outbound: LeaveDoor }) {}

  get size(): number {
    return this.#noticed.size;
  }

  async refused(env: InboundEnvelope, adapter: Adapter | undefined, opts: { leave: boolean; addressed: boolean; policy: GroupPolicy }): Promise<void> {
    const { log, metrics } = this.deps;
    const key = `${env.platform}:${env.botId}:${env.chatId}`;
    if (!this.#noticed.has(key)) {
      this.#remember(key, false);
      log.warn(
        { platform: env.platform, botId: env.botId, chatId: env.chatId, chatTitle: env.chatTitle, senderId: env.senderId },
        `a message in a group the bot was not admitted to got no answer (logged once per group). To admit it: ${opts.policy === "pairing" ? "an admin (ADMIN_USERS) sends /allowgroup in it, or " : ""}add ${env.platform}:${env.chatId} to ALLOW_GROUPS`,
      );
    }
    const left = this.#noticed.get(key);
    if (!opts.leave || !opts.addressed || left) {
      metrics.groupsUnadmitted.inc({ platform: env.platform, outcome: "silent" });
      return;
    }
    await this.#leave(env, adapter, key);
  }

  async #leave(env: InboundEnvelope, adapter: Adapter | undefined, key: string): Promise<void> {
    const { log, metrics } = this.deps;
    const where = { platform: env.platform, botId: env.botId, chatId: env.chatId };
    try {
      if (!adapter || !(await this.deps.outbound.enqueue({ kind: "leave", to: env.replyTo, chatId: env.chatId }))) {
        // Remembered as left so the warning is not repeated for every message.
        this.#remember(key, true);
        metrics.groupsUnadmitted.inc({ platform: env.platform, outcome: "silent" });
        log.warn(where, "GROUP_UNADMITTED=leave, but this platform's adapter cannot leave a group: the bot stays silent there instead");
        return;
      }
      this.#remember(key, true);
      metrics.groupsUnadmitted.inc({ platform: env.platform, outcome: "left" });
      log.info(where, "left a group the bot was not admitted to (GROUP_UNADMITTED=leave)");
    } catch (err) {
      // Not remembered as left: the next addressed message there tries again.
      metrics.groupsUnadmitted.inc({ platform: env.platform, outcome: "leave-failed" });
      metrics.internalErrors.inc({ where: `${env.platform}:group-leave` });
      log.error(
        { ...where, err: errInfo(err) },
        "could not leave a group the bot was not admitted to; it stays silent there and tries again when next addressed (check the bot's permissions on the platform)",
      );
    }
  }

  #remember(key: string, left: boolean): void {
    this.#noticed.delete(key);
    this.#noticed.set(key, left);
    if (this.#noticed.size > REMEMBERED_GROUPS) this.#noticed.delete(this.#noticed.keys().next().value!);
  }
}
