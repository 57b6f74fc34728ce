import { randomUUID } from "node:crypto";
import { setBounded } from "../bounded.js";
import type { Selectable } from "kysely";
import type { Database } from "./db.js";
import type { DB } from "./sql.js";
import { prepare, type Param } from "./prepared.js";

type NewUser = Pick<Selectable<DB["User"]>, "id" | "platform" | "externalId" | "displayName" | "createdAt">;
type NewGroup = Pick<Selectable<DB["Group"]>, "id" | "platform" | "externalId" | "title" | "parentId" | "createdAt">;
type Key = { platform: string; externalId: string };

// A first message's identity statements: compiled once (prepared.ts).
const INSERT_USER = prepare((b, p: Param<NewUser>) =>
  b
    .insertInto("User")
    .values({ id: p("id"), platform: p("platform"), externalId: p("externalId"), displayName: p("displayName"), createdAt: p("createdAt") })
    .onConflict((oc) => oc.doNothing())
    .returning("id"),
);
const INSERT_GROUP = prepare((b, p: Param<NewGroup>) =>
  b
    .insertInto("Group")
    .values({ id: p("id"), platform: p("platform"), externalId: p("externalId"), title: p("title"), parentId: p("parentId"), createdAt: p("createdAt") })
    .onConflict((oc) => oc.doNothing())
    .returning("id"),
);
const FIND_USER = prepare((b, p: Param<Key>) =>
  b.selectFrom("User").select("id").where("platform", "=", p("platform")).where("externalId", "=", p("externalId")),
);
const FIND_GROUP = prepare((b, p: Param<Key>) =>
  b.selectFrom("Group").select("id").where("platform", "=", p("platform")).where("externalId", "=", p("externalId")),
);

export type UserRecord = Selectable<DB["User"]>;

export type GroupRecord = Selectable<DB["Group"]>;

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

  /** The canonical user id, cached: the mapping never changes once written. */
  async userId(platform: string, externalId: string, displayName?: string): Promise<string> {
    const k = `${platform}\u0000${externalId}`;
    const hit = this.#users.get(k);
    if (hit) return hit;
    const id = await this.#insertOrGet({
      table: "User",
      values: { id: randomUUID(), platform, externalId, displayName: displayName ?? null, createdAt: new Date() },
    });
    setBounded(this.#users, k, id, CACHE_LIMIT);
    return id;
  }

  /**
   * Hot path of a first message: one INSERT ... ON CONFLICT DO NOTHING
   * RETURNING; only when the row already exists, a second statement reads it.
   */
  async #insertOrGet(row: { table: "User"; values: NewUser } | { table: "Group"; values: NewGroup }): Promise<string> {
    const { platform, externalId } = row.values;
    const op = row.table.toLowerCase();
    const insert = row.table === "User" ? INSERT_USER.bind(this.db, row.values) : INSERT_GROUP.bind(this.db, row.values);
    const [made] = await this.db.writeReturning(`ensure-${op}`, insert);
    if (made) return made.id;
    const [found] = await this.db.query(`find-${op}`, (row.table === "User" ? FIND_USER : FIND_GROUP).bind(this.db, { platform, externalId }));
    if (!found) throw new Error(`${row.table} ${platform}:${externalId} was neither inserted nor found`);
    return found.id;
  }

  async groupId(platform: string, externalId: string, opts: { parentId?: string; title?: string } = {}): Promise<string> {
    const k = `${platform}\u0000${externalId}`;
    const hit = this.#groups.get(k);
    if (hit) return hit;
    const id = await this.#insertOrGet({
      table: "Group",
      values: { id: randomUUID(), platform, externalId, title: opts.title ?? null, parentId: opts.parentId ?? null, createdAt: new Date() },
    });
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
    const id = await this.db.sqlTransaction("group-move", async (s) => {
      const byKey = (externalId: string) =>
        s.all(this.db.q.selectFrom("Group").select("id").where("platform", "=", platform).where("externalId", "=", externalId));
      const [old] = await byKey(from);
      if (!old) return undefined;
      const [taken] = await byKey(to);
      if (taken)
        await s.run(
          this.db.q
            .updateTable("Group")
            .set({ externalId: `${to}:superseded:${taken.id}` })
            .where("id", "=", taken.id),
        );
      await s.run(this.db.q.updateTable("Group").set({ externalId: to }).where("id", "=", old.id));
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
      const [r] = await this.db.query(
        `lookup-${kind}`,
        this.db.q.selectFrom(table).select("id").where("platform", "=", platform).where("externalId", "=", externalId),
      );
      if (r) return { kind, id: r.id };
    }
    return undefined;
  }

  async findUser(id: string): Promise<UserRecord | null> {
    const [r] = await this.db.query("user-find-id", this.db.q.selectFrom("User").selectAll().where("id", "=", id));
    return r ?? null;
  }

  async findGroup(id: string): Promise<GroupRecord | null> {
    const [r] = await this.db.query("group-find-id", this.db.q.selectFrom("Group").selectAll().where("id", "=", id));
    return r ?? null;
  }

  /** Joins a user account to a person (one person may own accounts on several platforms). */
  async link(userId: string, personId: string): Promise<void> {
    await this.db.exec(
      "identityLink-upsert",
      this.db.q
        .insertInto("IdentityLink")
        .values({ userId, personId, createdAt: new Date() })
        .onConflict((oc) => oc.column("userId").doUpdateSet({ personId })),
    );
  }

  /** The person a user belongs to; an unlinked user is their own person. */
  async personOf(userId: string): Promise<string> {
    const [l] = await this.db.query("identityLink-find", this.db.q.selectFrom("IdentityLink").select("personId").where("userId", "=", userId));
    return l?.personId ?? userId;
  }

  /** Every account linked to the same person as `userId`, including itself. */
  async accountsOf(userId: string): Promise<string[]> {
    const person = await this.personOf(userId);
    const links = await this.db.query("identityLink-findMany", this.db.q.selectFrom("IdentityLink").select("userId").where("personId", "=", person));
    return [...new Set([userId, person, ...links.map((l) => l.userId)])];
  }
}
