import { randomUUID } from "node:crypto";
import { setBounded } from "../bounded.js";
import type { Database } from "./db.js";
import { isUniqueViolation } from "./errors.js";

export interface UserRecord {
  id: string;
  platform: string;
  externalId: string;
  displayName: string | null;
  createdAt: Date;
}

export interface GroupRecord {
  id: string;
  platform: string;
  externalId: string;
  parentId: string | null;
  title: string | null;
  createdAt: Date;
}

/** Identity caches stay bounded (a miss costs one indexed read). */
const CACHE_LIMIT = 20_000;

/**
 * Canonical identities: each platform user and group maps to one UUID, unique
 * on platform + external id. Insert-or-get is race-safe: a losing insert reads
 * the winner's row.
 */
export class IdentityStore {
  readonly #users = new Map<string, string>();
  readonly #groups = new Map<string, string>();

  constructor(readonly db: Database) {}

  async ensureUser(platform: string, externalId: string, displayName?: string): Promise<UserRecord> {
    const where = { platform_externalId: { platform, externalId } };
    const found = await this.db.read((c) => c.user.findUnique({ where }), "user-findUnique");
    if (found) return found;
    try {
      return await this.db.write((c) => c.user.create({ data: { id: randomUUID(), platform, externalId, displayName: displayName ?? null } }), "user-create");
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      return (await this.db.read((c) => c.user.findUnique({ where }), "user-findUnique"))!;
    }
  }

  /** The canonical user id, cached: the mapping never changes once written. */
  async userId(platform: string, externalId: string, displayName?: string): Promise<string> {
    const k = `${platform}\u0000${externalId}`;
    const hit = this.#users.get(k);
    if (hit) return hit;
    const id = await this.#insertOrGet("User", [randomUUID(), platform, externalId, displayName ?? null, null, new Date()], platform, externalId);
    setBounded(this.#users, k, id, CACHE_LIMIT);
    return id;
  }

  /**
   * Hot path of a first message: one INSERT ... ON CONFLICT DO NOTHING
   * RETURNING; only when the row already exists, a second statement reads it.
   * Columns: id, platform, externalId, displayName (User) or title (Group), parentId (Group), createdAt.
   */
  async #insertOrGet(
    table: "User" | "Group",
    v: [string, string, string, string | null, string | null, Date],
    platform: string,
    externalId: string,
  ): Promise<string> {
    const insert =
      table === "User"
        ? `INSERT INTO "User" ("id","platform","externalId","displayName","createdAt") VALUES (?,?,?,?,?) ON CONFLICT DO NOTHING RETURNING "id"`
        : `INSERT INTO "Group" ("id","platform","externalId","title","parentId","createdAt") VALUES (?,?,?,?,?,?) ON CONFLICT DO NOTHING RETURNING "id"`;
    const params = table === "User" ? [v[0], v[1], v[2], v[3], v[5]] : v;
    const [made] = await this.db.writeReturning<{ id: string }>(`ensure-${table.toLowerCase()}`, insert, params);
    if (made) return made.id;
    const [found] = await this.db.query<{ id: string }>(
      `find-${table.toLowerCase()}`,
      `SELECT "id" FROM "${table}" WHERE "platform" = ? AND "externalId" = ?`,
      [platform, externalId],
    );
    if (!found) throw new Error(`${table} ${platform}:${externalId} was neither inserted nor found`);
    return found.id;
  }

  async ensureGroup(platform: string, externalId: string, opts: { parentId?: string; title?: string } = {}): Promise<GroupRecord> {
    const where = { platform_externalId: { platform, externalId } };
    const found = await this.db.read((c) => c.group.findUnique({ where }), "group-findUnique");
    if (found) return found;
    try {
      return await this.db.write(
        (c) => c.group.create({ data: { id: randomUUID(), platform, externalId, parentId: opts.parentId ?? null, title: opts.title ?? null } }),
        "group-create",
      );
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      return (await this.db.read((c) => c.group.findUnique({ where }), "group-findUnique"))!;
    }
  }

  async groupId(platform: string, externalId: string, opts: { parentId?: string; title?: string } = {}): Promise<string> {
    const k = `${platform}\u0000${externalId}`;
    const hit = this.#groups.get(k);
    if (hit) return hit;
    const id = await this.#insertOrGet(
      "Group",
      [randomUUID(), platform, externalId, opts.title ?? null, opts.parentId ?? null, new Date()],
      platform,
      externalId,
    );
    setBounded(this.#groups, k, id, CACHE_LIMIT);
    return id;
  }

  /**
   * A group's chat moved to a new external id (Telegram's upgrade of a group
   * to a supergroup): the group's canonical id now answers to `to`, so its
   * bindings, sessions and memory follow. A group row already made for `to`
   * (a message from the new chat seen before the migration notice) is set
   * aside under a superseded id. Idempotent: once moved, `from` is unknown
   * and nothing changes. Returns the moved group's id, if any moved.
   */
  async moveGroup(platform: string, from: string, to: string): Promise<string | undefined> {
    const id = await this.db.transaction("group-move", async (tx) => {
      const old = await tx.group.findUnique({ where: { platform_externalId: { platform, externalId: from } } });
      if (!old) return undefined;
      const taken = await tx.group.findUnique({ where: { platform_externalId: { platform, externalId: to } } });
      if (taken) await tx.group.update({ where: { id: taken.id }, data: { externalId: `${to}:superseded:${taken.id}` } });
      await tx.group.update({ where: { id: old.id }, data: { externalId: to } });
      return old.id;
    });
    this.#groups.delete(`${platform}\u0000${from}`);
    this.#groups.delete(`${platform}\u0000${to}`);
    return id;
  }

  /**
   * The internal id of a platform account or chat, without creating one:
   * users first (private chats own their sessions by user), then groups.
   */
  async lookup(platform: string, externalId: string): Promise<{ kind: "user" | "group"; id: string } | undefined> {
    for (const [table, kind] of [
      ["User", "user"],
      ["Group", "group"],
    ] as const) {
      const [r] = await this.db.query<{ id: string }>(`lookup-${kind}`, `SELECT "id" FROM "${table}" WHERE "platform" = ? AND "externalId" = ?`, [
        platform,
        externalId,
      ]);
      if (r) return { kind, id: r.id };
    }
    return undefined;
  }

  findUser(id: string): Promise<UserRecord | null> {
    return this.db.read((c) => c.user.findUnique({ where: { id } }), "user-findUnique");
  }

  findGroup(id: string): Promise<GroupRecord | null> {
    return this.db.read((c) => c.group.findUnique({ where: { id } }), "group-findUnique");
  }

  /** Joins a user account to a person (one person may own accounts on several platforms). */
  async link(userId: string, personId: string): Promise<void> {
    await this.db.write((c) => c.identityLink.upsert({ where: { userId }, create: { userId, personId }, update: { personId } }), "identityLink-upsert");
  }

  /** The person a user belongs to; an unlinked user is their own person. */
  async personOf(userId: string): Promise<string> {
    const l = await this.db.read((c) => c.identityLink.findUnique({ where: { userId } }), "identityLink-findUnique");
    return l?.personId ?? userId;
  }

  /** Every account linked to the same person as `userId`, including itself. */
  async accountsOf(userId: string): Promise<string[]> {
    const person = await this.personOf(userId);
    const links = await this.db.read((c) => c.identityLink.findMany({ where: { personId: person } }), "identityLink-findMany");
    return [...new Set([userId, person, ...links.map((l) => l.userId)])];
  }
}
