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

/** What the gateway has done about a group: logged it, logged that it stays there rather than leave (see HeldBack), or left it. */
type Noticed = "logged" | "held" | "left";

/** Why a leave was not made: another chat it would take the bot out of is admitted, or the adapter cannot tell which chats it would. */
type HeldBack = { admitted: string } | { unknown: true };

export interface RefusedOptions {
  /** GROUP_UNADMITTED=leave. */
  leave: boolean;
  /** The message addresses the bot (and is not an admin's). */
  addressed: boolean;
  policy: GroupPolicy;
  /**
   * Whether another chat of the same bot and platform is admitted (the rule
   * of groupAdmitted, src/gateway/inbound/access.ts), for a platform whose
   * leave takes the bot out of other chats too (Adapter.leaveTakesAlso).
   * Without it, such a leave is never made.
   */
  admitted?: (chatId: string) => Promise<boolean>;
}

/**
 * What the gateway does about a message in a group it was not admitted to
 * (GROUP_POLICY): it is never answered; each is counted, the group is
 * logged once (not once per message: a busy group would flood the log), and
 * with GROUP_UNADMITTED=leave the bot leaves the group when addressed there.
 * Where leaving a group leaves more than that group (Discord: the whole
 * server, Adapter.leaveTakesAlso), it leaves only if none of the other chats
 * is admitted; else it stays silent there, so nobody can take the bot out of
 * an admitted channel by addressing it in another channel of the server.
 */
export class UnadmittedGroups {
  /** `platform:botId:chatId` -> what was done about it; insertion order is age, so the oldest goes first. */
  readonly #noticed = new Map<string, Noticed>();

  constructor(private readonly deps: { log: Logger; metrics: GatewayMetrics; outbound: LeaveDoor }) {}

  get size(): number {
    return this.#noticed.size;
  }

  async refused(env: InboundEnvelope, adapter: Adapter | undefined, opts: RefusedOptions): Promise<void> {
    const { log, metrics } = this.deps;
    const key = `${env.platform}:${env.botId}:${env.chatId}`;
    if (!this.#noticed.has(key)) {
      this.#remember(key, "logged");
      log.warn(
        { platform: env.platform, botId: env.botId, chatId: env.chatId, chatTitle: env.chatTitle, senderId: env.senderId },
        `a message in a group the bot was not admitted to got no answer (logged once per group). To admit it: ${opts.policy === "pairing" ? "an admin (ADMIN_USERS) sends /allowgroup in it, or " : ""}add ${env.platform}:${env.chatId} to ALLOW_GROUPS`,
      );
    }
    if (!opts.leave || !opts.addressed || this.#noticed.get(key) === "left") {
      metrics.groupsUnadmitted.inc({ platform: env.platform, outcome: "silent" });
      return;
    }
    // Asked again at every addressed message: the other chat may have been dropped since.
    const held = await this.#heldBack(env, adapter, opts.admitted);
    if (held) {
      metrics.groupsUnadmitted.inc({ platform: env.platform, outcome: "silent" });
      if (this.#noticed.get(key) !== "held") {
        this.#remember(key, "held");
        log.warn(
          { platform: env.platform, botId: env.botId, chatId: env.chatId, ...("admitted" in held && { admittedChatId: held.admitted }) },
          "admitted" in held
            ? `GROUP_UNADMITTED=leave, but on ${env.platform} leaving this group would also leave ${env.platform}:${held.admitted}, which is admitted (the same server): the bot stays silent here instead (logged once per group)`
            : `GROUP_UNADMITTED=leave, but on ${env.platform} leaving this group would leave other chats too, and which ones is not known yet: the bot stays silent here for now (logged once per group)`,
        );
      }
      return;
    }
    await this.#leave(env, adapter, key);
  }

  /** Undefined when leaving this group takes the bot out of nothing admitted; else why it stays. */
  async #heldBack(env: InboundEnvelope, adapter: Adapter | undefined, admitted: RefusedOptions["admitted"]): Promise<HeldBack | undefined> {
    if (!adapter?.leaveTakesAlso) return undefined;
    try {
      const others = await adapter.leaveTakesAlso(env.chatId);
      if (others === undefined || (others.length > 0 && !admitted)) return { unknown: true };
      for (const chatId of others) if (await admitted!(chatId)) return { admitted: chatId };
      return undefined;
    } catch (err) {
      // Not knowing is no licence to leave: stay, and look again at the next addressed message.
      this.deps.metrics.internalErrors.inc({ where: `${env.platform}:group-leave-check` });
      this.deps.log.error(
        { platform: env.platform, botId: env.botId, chatId: env.chatId, err: errInfo(err) },
        "could not tell what leaving a group would take the bot out of; it stays silent there",
      );
      return { unknown: true };
    }
  }

  async #leave(env: InboundEnvelope, adapter: Adapter | undefined, key: string): Promise<void> {
    const { log, metrics } = this.deps;
    const where = { platform: env.platform, botId: env.botId, chatId: env.chatId };
    try {
      if (!adapter || !(await this.deps.outbound.enqueue({ kind: "leave", to: env.replyTo, chatId: env.chatId }))) {
        // Remembered as left so the warning is not repeated for every message.
        this.#remember(key, "left");
        metrics.groupsUnadmitted.inc({ platform: env.platform, outcome: "silent" });
        log.warn(where, "GROUP_UNADMITTED=leave, but this platform's adapter cannot leave a group: the bot stays silent there instead");
        return;
      }
      this.#remember(key, "left");
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

  #remember(key: string, what: Noticed): void {
    this.#noticed.delete(key);
    this.#noticed.set(key, what);
    if (this.#noticed.size > REMEMBERED_GROUPS) this.#noticed.delete(this.#noticed.keys().next().value!);
  }
}
