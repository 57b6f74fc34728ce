import type { Selectable } from "kysely";
import { codecs } from "./codecs.js";
import type { Database } from "./db.js";
import type { DB } from "./sql.js";

export type ApprovalStatus = "pending" | "approved" | "denied" | "expired" | "cancelled";

/** An approval's row (the generated type, with its status narrowed). */
export type ApprovalRecord = Omit<Selectable<DB["Approval"]>, "status"> & { status: ApprovalStatus };

export type NewApproval = Omit<ApprovalRecord, "status" | "always" | "decidedById" | "decidedByName" | "cardMessageId" | "decidedAt" | "createdAt">;

const asRecord = (r: Selectable<DB["Approval"]>): ApprovalRecord => ({ ...r, status: r.status as ApprovalStatus });

/** Where an "Always" grant of a tool holds: a chat, or one thread or forum topic of it (its own conversation). */
export interface GrantScope {
  platform: string;
  botId: string;
  chatId: string;
  /** The thread or forum topic, as the reply address names it; absent: the chat itself. */
  threadId?: string;
  tool: string;
}

const GRANT = "tool-grant:";

/**
 * The AdapterState key of an "Always" grant of a tool: the conversation's, or, given `requesterId`, one
 * requester's in it. A thread's segment is `thread=<id>`: a tool name never holds `=` or `:` (function names
 * are `[a-zA-Z0-9_-]`), so no chat's grant of any tool reads as a thread's. A chat's key is as it always was.
 */
export function toolGrantKey(s: GrantScope, requesterId?: string): string {
  const where = s.threadId === undefined ? s.chatId : `${s.chatId}:thread=${s.threadId}`;
  return `${GRANT}${s.platform}:${s.botId}:${where}:${s.tool}${requesterId === undefined ? "" : `:by:${requesterId}`}`;
}

/** The key with its chat `from` (any bot of `platform`, any thread) now `to`; undefined for another chat's key. */
function movedGrantKey(key: string, platform: string, from: string, to: string): string | undefined {
  const head = `${GRANT}${platform}:`;
  if (!key.startsWith(head)) return undefined;
  const rest = key.slice(head.length);
  const bot = rest.indexOf(":");
  if (bot < 0 || !rest.startsWith(`${from}:`, bot + 1)) return undefined;
  return `${head}${rest.slice(0, bot + 1)}${to}${rest.slice(bot + 1 + from.length)}`;
}

/**
 * Tool-call approvals. The decision is one conditional UPDATE (`WHERE status
 * = 'pending'`), so of any number of clicks, in one process or several,
 * exactly one changes the row and the rest read who won.
 */
export class ApprovalStore {
  constructor(readonly db: Database) {}

  async create(a: NewApproval, now = new Date()): Promise<void> {
    await this.db.exec(
      "approval-create",
      this.db.q.insertInto("Approval").values({
        id: a.id,
        sessionId: a.sessionId,
        platform: a.platform,
        botId: a.botId,
        chatId: a.chatId,
        replyTo: a.replyTo,
        requesterId: a.requesterId,
        requesterName: a.requesterName,
        privateChat: a.privateChat,
        tool: a.tool,
        server: a.server,
        arguments: a.arguments,
        status: "pending",
        always: false,
        owner: a.owner,
        createdAt: now,
        expiresAt: a.expiresAt,
      }),
    );
  }

  async get(id: string): Promise<ApprovalRecord | undefined> {
    const [r] = await this.db.query("approval-get", this.db.q.selectFrom("Approval").selectAll().where("id", "=", id));
    return r ? asRecord(r) : undefined;
  }

  async setCard(id: string, messageId: string): Promise<void> {
    await this.db.exec("approval-card", this.db.q.updateTable("Approval").set({ cardMessageId: messageId }).where("id", "=", id));
  }

  /**
   * Decides a pending approval. Returns true when this call's decision won;
   * false when the approval was already decided (or does not exist).
   */
  async decide(
    id: string,
    d: { status: Exclude<ApprovalStatus, "pending">; always?: boolean; byId?: string; byName?: string },
    now = new Date(),
  ): Promise<boolean> {
    const n = await this.db.exec(
      "approval-decide",
      this.db.q
        .updateTable("Approval")
        .set({ status: d.status, always: d.always ?? false, decidedById: d.byId ?? null, decidedByName: d.byName ?? null, decidedAt: now })
        .where("id", "=", id)
        .where("status", "=", "pending"),
    );
    return n === 1;
  }

  /**
   * A group now lives under another chat id (a Telegram group upgraded to a supergroup), as its identity,
   * sessions and admission do: its pending approvals (their chat and card address, so a press or a typed
   * `/approve` in the new chat decides them) and its "Always" grants, in one transaction. A grant the new id
   * already has is kept. Idempotent: a second call (Telegram announces the move twice, an update comes again)
   * finds nothing left under the old id.
   */
  moveChat(platform: string, from: string, to: string): Promise<{ approvals: number; grants: number }> {
    const q = this.db.q;
    return this.db.sqlTransaction("approval-chat-move", async (s) => {
      const pending = await s.all(
        q.selectFrom("Approval").select(["id", "replyTo"]).where("platform", "=", platform).where("chatId", "=", from).where("status", "=", "pending"),
      );
      for (const r of pending) {
        const replyTo = codecs.approvalReplyTo.encode({ ...codecs.approvalReplyTo.decode(r.replyTo, r.id), chatId: to });
        await s.run(q.updateTable("Approval").set({ chatId: to, replyTo }).where("id", "=", r.id).where("chatId", "=", from));
      }
      // LIKE only narrows (its `_` matches any character; SQLite ignores case): movedGrantKey picks exactly.
      const candidates = await s.all(q.selectFrom("AdapterState").selectAll().where("key", "like", `${GRANT}${platform}:%:${from}:%`));
      let grants = 0;
      for (const g of candidates) {
        const key = movedGrantKey(g.key, platform, from, to);
        if (key === undefined) continue;
        await s.run(
          q
            .insertInto("AdapterState")
            .values({ ...g, key })
            .onConflict((oc) => oc.column("key").doNothing()),
        );
        await s.run(q.deleteFrom("AdapterState").where("key", "=", g.key));
        grants++;
      }
      return { approvals: pending.length, grants };
    });
  }

  /** Pending approvals whose waiting process is not `owner` (left by an earlier run). */
  async pendingNotOwnedBy(owner: string, limit = 500): Promise<ApprovalRecord[]> {
    const rows = await this.db.query(
      "approval-orphans",
      this.db.q.selectFrom("Approval").selectAll().where("status", "=", "pending").where("owner", "<>", owner).orderBy("createdAt").limit(limit),
    );
    return rows.map(asRecord);
  }
}
