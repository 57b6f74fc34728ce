import { randomUUID } from "node:crypto";
import type { SessionRecord } from "../store/sessions.js";
import { errors } from "./errors.js";

export const KINDS = ["main", "chat", "task", "delegate", "scheduler"] as const;
export type Kind = (typeof KINDS)[number];
/** Kinds the agent uses internally; `excludeInternal` hides them from listings. */
export const INTERNAL_KINDS: readonly Kind[] = ["task", "delegate"];

export function isKind(v: unknown): v is Kind {
  return typeof v === "string" && (KINDS as readonly string[]).includes(v);
}

/** A session as the domain sees it. Always valid: build it with fromRecord or validate. */
export interface Info {
  id: string;
  agentId: string;
  /** The owner. For a group session this is the group's canonical UUID. */
  userId: string;
  groupId?: string;
  channel: string;
  kind: Kind;
  projectId?: string;
  title?: string;
  parentId?: string;
  persona?: string;
  metadata: Record<string, unknown>;
  turnCount: number;
  createdAt: Date;
  lastActive: Date;
  archived: boolean;
  /** Why it ended, once archived: one of SESSION_END_REASONS. */
  endReason?: SessionEndReason;
}

/** Why a session ended: /new, /reset, /resume (switched away), an archive, an operator's rotate, or a binding repaired after an out-of-band archive. */
export const SESSION_END_REASONS = ["new", "reset", "resume", "archive", "rotate", "repair"] as const;
export type SessionEndReason = (typeof SESSION_END_REASONS)[number];

/** A fresh session's Info: no turns, active, created now, a random id unless one is given. */
export function newInfo(base: Omit<Info, "id" | "metadata" | "turnCount" | "createdAt" | "lastActive" | "archived"> & Partial<Info>): Info {
  const now = new Date();
  return {
    metadata: {},
    turnCount: 0,
    createdAt: now,
    lastActive: now,
    archived: false,
    ...base,
    id: base.id ?? randomUUID(),
  };
}

/**
 * Canonical form only (lower case, as randomUUID writes them): an upper-case
 * spelling of a group's id is another string to every key and index, so it
 * would land on another scope.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const isUuid = (v: unknown): v is string => typeof v === "string" && UUID.test(v);

const nonEmpty = (v: unknown, max = 512): v is string => typeof v === "string" && v.trim().length > 0 && v.length <= max;
const validDate = (v: unknown): v is Date => v instanceof Date && !Number.isNaN(v.getTime());

/**
 * Fails closed: every session has an id, an agent and an owner, a known kind
 * and a channel; a group session is owned by its group (userId === groupId,
 * a canonical UUID). Throws SessionError("Invalid") naming the first problem.
 */
export function validate(info: Info): Info {
  const bad = (field: string, why: string) =>
    errors.invalid(`Invalid session: ${field} ${why}.`, { sessionId: typeof info?.id === "string" ? info.id : undefined, field });
  if (!info || typeof info !== "object") throw errors.invalid("Invalid session: not an object.");
  if (!nonEmpty(info.id, 200)) throw bad("id", "must be a non-empty string of at most 200 characters");
  if (!nonEmpty(info.agentId, 200)) throw bad("agentId", "must be a non-empty string");
  if (!nonEmpty(info.userId, 200)) throw bad("userId", "must be a non-empty string (every session has an owner)");
  if (!isKind(info.kind)) throw bad("kind", `must be one of ${KINDS.join(", ")}`);
  if (!nonEmpty(info.channel, 1000)) throw bad("channel", "must be a non-empty string");
  if (info.groupId !== undefined) {
    if (!isUuid(info.groupId)) throw bad("groupId", "must be the group's canonical UUID, in lower case");
    if (info.userId !== info.groupId) throw bad("userId", "must equal groupId: a group session is owned by its group");
  }
  for (const f of ["projectId", "title", "parentId", "persona"] as const) {
    if (info[f] !== undefined && typeof info[f] !== "string") throw bad(f, "must be a string when present");
  }
  if (!info.metadata || typeof info.metadata !== "object" || Array.isArray(info.metadata)) throw bad("metadata", "must be an object");
  if (!Number.isInteger(info.turnCount) || info.turnCount < 0) throw bad("turnCount", "must be a non-negative integer");
  if (!validDate(info.createdAt)) throw bad("createdAt", "must be a valid date");
  if (!validDate(info.lastActive)) throw bad("lastActive", "must be a valid date");
  if (typeof info.archived !== "boolean") throw bad("archived", "must be a boolean");
  return info;
}

const opt = (v: string | null): string | undefined => (v === null ? undefined : v);
const orNull = (v: string | undefined): string | null => (v === undefined ? null : v);

/**
 * A session as operators see it (the operator CLI, the console API): plain
 * JSON, dates as ISO strings, an absent optional field as null. Metadata is
 * left out: it is free-form, and each view picks what it shows of it.
 */
export function sessionSummary(info: Info) {
  return {
    id: info.id,
    kind: info.kind,
    agentId: info.agentId,
    userId: info.userId,
    groupId: orNull(info.groupId),
    channel: info.channel,
    title: orNull(info.title),
    parentId: orNull(info.parentId),
    projectId: orNull(info.projectId),
    persona: orNull(info.persona),
    turnCount: info.turnCount,
    archived: info.archived,
    createdAt: info.createdAt.toISOString(),
    lastActive: info.lastActive.toISOString(),
  };
}

/** Info -> storage row. Validates first. */
export function record(info: Info): SessionRecord {
  validate(info);
  return {
    id: info.id,
    agentId: info.agentId,
    userId: info.userId,
    groupId: orNull(info.groupId),
    channel: info.channel,
    kind: info.kind,
    projectId: orNull(info.projectId),
    title: orNull(info.title),
    parentId: orNull(info.parentId),
    persona: orNull(info.persona),
    metadata: JSON.stringify(info.metadata),
    turnCount: info.turnCount,
    createdAt: info.createdAt,
    lastActive: info.lastActive,
    archived: info.archived,
    archivedAt: info.archived ? info.lastActive : null,
    endReason: orNull(info.endReason),
  };
}

/** Storage row -> Info. Fails closed on anything malformed, including its metadata JSON. */
export function fromRecord(rec: SessionRecord): Info {
  let metadata: unknown;
  try {
    metadata = JSON.parse(rec.metadata);
  } catch {
    throw errors.invalid(`Invalid session: metadata of ${rec.id} is not valid JSON.`, { sessionId: rec.id, field: "metadata" });
  }
  return validate({
    id: rec.id,
    agentId: rec.agentId,
    userId: rec.userId,
    groupId: opt(rec.groupId),
    channel: rec.channel,
    kind: rec.kind as Kind,
    projectId: opt(rec.projectId),
    title: opt(rec.title),
    parentId: opt(rec.parentId),
    persona: opt(rec.persona),
    metadata: metadata as Record<string, unknown>,
    turnCount: rec.turnCount,
    createdAt: rec.createdAt,
    lastActive: rec.lastActive,
    archived: rec.archived,
    ...(rec.endReason
      ? { endReason: (SESSION_END_REASONS as readonly string[]).includes(rec.endReason) ? (rec.endReason as SessionEndReason) : "archive" }
      : {}),
  });
}

/** Whether this session belongs to a group (and so shares the group's scope). */
export const isGroupSession = (info: Info): boolean => info.groupId !== undefined;
