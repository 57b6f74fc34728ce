/**
 * The session and binding rows as the stores read and write them, and the
 * statements every store of them shares (sessions.ts, rotation.ts).
 */

import type { Selectable } from "kysely";
import type { DB, Sql } from "./sql.js";
import { prepare, type Dialect, type Param } from "./prepared.js";

/** A session row as stored. The domain maps it to and from Info (src/session/info.ts). endReason: why it ended (SESSION_END_REASONS). */
export type SessionRecord = Selectable<DB["Session"]>;

export type BindingRecord = Selectable<DB["Binding"]>;

export type NewBinding = Omit<BindingRecord, "sessionId" | "version" | "createdAt" | "updatedAt">;

// A conversation's first message and every lookup by id or key: compiled once (prepared.ts).
const SESSION_COLUMNS = [
  "id",
  "agentId",
  "userId",
  "groupId",
  "channel",
  "kind",
  "projectId",
  "title",
  "parentId",
  "persona",
  "metadata",
  "turnCount",
  "createdAt",
  "lastActive",
  "archived",
  "archivedAt",
  "endReason",
] as const satisfies ReadonlyArray<keyof SessionRecord>;
export const BINDING_COLUMNS = [
  "key",
  "scope",
  "agentId",
  "userId",
  "groupId",
  "kind",
  "channel",
  "sessionId",
  "version",
  "createdAt",
  "updatedAt",
] as const satisfies ReadonlyArray<keyof BindingRecord>;
/** Every column of a record as a marker of the same name. */
const markers = <T, K extends keyof T & string>(p: Param<T>, cols: readonly K[]): Pick<T, K> => Object.fromEntries(cols.map((c) => [c, p(c)])) as Pick<T, K>;

export const FIND_SESSION = prepare((b, p: Param<{ id: string }>) => b.selectFrom("Session").selectAll().where("id", "=", p("id")));
export const FIND_BINDING = prepare((b, p: Param<{ key: string }>) => b.selectFrom("Binding").selectAll().where("key", "=", p("key")));
export const INSERT_SESSION = prepare((b, p: Param<SessionRecord>) => b.insertInto("Session").values(markers(p, SESSION_COLUMNS)));
const INSERT_BINDING = prepare((b, p: Param<BindingRecord>) => b.insertInto("Binding").values(markers(p, BINDING_COLUMNS)));
/** PostgreSQL: a new session and its binding in one statement (one round trip, atomic). */
export const INSERT_SESSION_AND_BINDING = prepare((b, p: Param<SessionRecord & { [K in keyof BindingRecord as `b_${K}`]: BindingRecord[K] }>) =>
  b
    .with("s", (w) => w.insertInto("Session").values(markers(p, SESSION_COLUMNS)).returning("id"))
    .insertInto("Binding")
    .columns(["key", "scope", "agentId", "userId", "groupId", "kind", "channel", "sessionId", "version", "createdAt", "updatedAt"])
    .expression((eb) =>
      eb
        .selectFrom("s")
        .select((s) => [
          s.val(p("b_key")).as("key"),
          s.val(p("b_scope")).as("scope"),
          s.val(p("b_agentId")).as("agentId"),
          s.val(p("b_userId")).as("userId"),
          s.val(p("b_groupId")).as("groupId"),
          s.val(p("b_kind")).as("kind"),
          s.val(p("b_channel")).as("channel"),
          "s.id",
          s.val(p("b_version")).as("version"),
          s.val(p("b_createdAt")).as("createdAt"),
          s.val(p("b_updatedAt")).as("updatedAt"),
        ]),
    ),
);

export function row(r: SessionRecord): SessionRecord {
  return {
    id: r.id,
    agentId: r.agentId,
    userId: r.userId,
    groupId: r.groupId,
    channel: r.channel,
    kind: r.kind,
    projectId: r.projectId,
    title: r.title,
    parentId: r.parentId,
    persona: r.persona,
    metadata: r.metadata,
    turnCount: r.turnCount,
    createdAt: r.createdAt,
    lastActive: r.lastActive,
    archived: r.archived,
    archivedAt: r.archivedAt,
    endReason: r.endReason ?? null,
  };
}

export async function sessionIn(db: Dialect, s: Sql, id: string): Promise<SessionRecord | null> {
  const [r] = await s.all(FIND_SESSION.bind(db, { id }));
  return r ?? null;
}

export async function bindingIn(db: Dialect, s: Sql, key: string): Promise<BindingRecord | null> {
  const [r] = await s.all(FIND_BINDING.bind(db, { key }));
  return r ?? null;
}

export async function insertSession(db: Dialect, s: Sql, rec: SessionRecord): Promise<SessionRecord> {
  const r = row(rec);
  await s.run(INSERT_SESSION.bind(db, r));
  return r;
}

/**
 * What names a binding's conversation (key, scope, agent, owner, group, kind,
 * channel), copied so that no other property of `b` is carried along.
 */
export function bindingIdentity(b: NewBinding): NewBinding {
  return {
    key: b.key,
    scope: b.scope,
    agentId: b.agentId,
    userId: b.userId,
    groupId: b.groupId,
    kind: b.kind,
    channel: b.channel,
  };
}

export function newBinding(b: NewBinding, sessionId: string, now: Date): BindingRecord {
  return { ...bindingIdentity(b), sessionId, version: 0, createdAt: now, updatedAt: now };
}

export async function insertBinding(db: Dialect, s: Sql, b: NewBinding, sessionId: string, now: Date): Promise<BindingRecord> {
  const rec = newBinding(b, sessionId, now);
  await s.run(INSERT_BINDING.bind(db, rec));
  return rec;
}
