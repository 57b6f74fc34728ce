/** What callers ask the registry (src/session/registry.ts) for, and what a review lists. */
import type { Info, Kind } from "./info.js";

/** Who is asking: a user (or a group, for a group session) talking to an agent. */
export interface Scope {
  userId: string;
  agentId: string;
}

export interface EnsureRequest {
  id?: string;
  agentId: string;
  userId: string;
  groupId?: string;
  channel: string;
  kind: Kind;
  /** An existing session must be of this kind, or the result is WrongKind. */
  requireKind?: Kind;
  /** A missing exact id may be created with that id. */
  allowExactIdCreate?: boolean;
  /** With no id, create a session with a fresh id. */
  createIfMissing?: boolean;
  projectId?: string;
  title?: string;
  parentId?: string;
  persona?: string;
}

export interface ListOptions {
  kinds?: Kind[];
  includeArchived?: boolean;
  /** Hide task and delegate sessions. */
  excludeInternal?: boolean;
  projectId?: string;
  channel?: string;
  limit?: number;
  offset?: number;
}

export interface ReviewRequest {
  agentId?: string;
  /** Kinds to review. Default: every kind but delegate, task and scheduler. */
  kinds?: Kind[];
  /** Keep only sessions on private user channels. */
  requirePrivateMain?: boolean;
  activeSince?: Date;
  limit?: number;
}

export interface MainRequest {
  agentId: string;
  userId: string;
  channel: string;
  createIfMissing?: boolean;
}

export interface MainRotateRequest extends MainRequest {
  expectedSessionId?: string;
  persona?: string;
}

export type ReviewItem = Info & { latestSeq: number };
