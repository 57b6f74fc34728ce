import { errors } from "./errors.js";
import { isGroupSession, validate, type Info } from "./info.js";

/**
 * Where a session's memories live. This is the only way to produce one.
 * - A private session reads, writes and compacts one partition: its owner's,
 *   with this agent.
 * - A group session shares one canonical group scope for read and write, so
 *   every member's turns inform the group; compaction is rejected, because it
 *   would rewrite memories that other members' sessions rely on.
 */
export interface MemoryScope {
  readonly kind: "private" | "group";
  readonly read: string;
  readonly write: string;
  /** The partition to compact. Throws Forbidden for a group scope. */
  compact(): string;
}

export function memoryScope(info: Info): MemoryScope {
  validate(info);
  if (isGroupSession(info)) {
    const scope = `group:${info.agentId}:${info.groupId}`;
    return {
      kind: "group",
      read: scope,
      write: scope,
      compact() {
        throw errors.forbidden(`Compacting the shared memory of group ${info.groupId}`, { sessionId: info.id, scope });
      },
    };
  }
  const scope = `private:${info.agentId}:${info.userId}`;
  return { kind: "private", read: scope, write: scope, compact: () => scope };
}
