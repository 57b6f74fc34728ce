import { bindingAgentIdOf } from "../session/agent-id.js";
import type { Info } from "../session/info.js";
import type { Registry } from "../session/registry.js";
import type { MessageEvent } from "./events.js";
import { resume } from "./handoff.js";
import type { ConversationCapabilities } from "./interceptors.js";
import type { LiveSession } from "./live-session.js";

/** What the Runner lends to the capabilities of one event: middleware gets the capabilities, never this. */
export interface CapabilityHost {
  readonly registry: Registry;
  has(id: string): boolean;
  get(id: string): LiveSession;
  refresh(session: LiveSession): Promise<void>;
  whenIdle(session: LiveSession): Promise<void>;
  handoff(from: LiveSession, to: Info, phase: "rotated" | "switched"): LiveSession;
  stop(session: LiveSession): { running: boolean; dropped: number };
}

/** The capabilities of the middleware run for `event` in `session` (see ConversationCapabilities). */
export function capabilities(host: CapabilityHost, session: LiveSession, event: MessageEvent): ConversationCapabilities {
  const { registry } = host;
  const c = event.conversation;
  // The live session a rotation moves away from: the one named, if it is live, else this one.
  const from = (id: string | undefined) => (id && id !== session.id && host.has(id) ? host.get(id) : session);
  return {
    // Every session of the conversation's binding, those run by an agent chosen with /agent included (their own agent id differs).
    sessions: async (limit = 20) =>
      (await registry.listAll({ userId: c.userId, kinds: ["chat"], includeArchived: true, channel: c.groupId ? undefined : c.channel, limit: limit * 4 }))
        .filter((s) => bindingAgentIdOf(s) === c.agentId)
        .slice(0, limit),
    refresh: () => host.refresh(session),
    whenIdle: () => host.whenIdle(session),
    rotate: async ({ expectedSessionId, persona, reason, agentId }) => {
      const r = await registry.rotateChannel({ ...c, expectedSessionId, persona, reason, inboundId: event.inboundId, successorAgentId: agentId });
      host.handoff(from(r.previous?.id), r.current, "rotated");
      return r.current;
    },
    verifyRotation: (expected) => registry.verifyRotation(expected, () => registry.peekChatChannel(c)),
    followBinding: async (fromSessionId) => {
      const current = await registry.resolveChatChannel(c);
      host.handoff(from(fromSessionId), current, "rotated");
      return current;
    },
    stop: () => host.stop(session),
    switchTo: (targetSessionId) => resume(registry, (f, to) => host.handoff(f, to, "switched"), session, c, targetSessionId),
  };
}
