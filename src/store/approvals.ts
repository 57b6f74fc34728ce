import type { Selectable } from "kysely";
import type { Database } from "./db.js";
import type { DB } from "./sql.js";

export type ApprovalStatus = "pending" | "approved" | "denied" | "expired" | "cancelled";

/** An approval's row (the generated type, with its status narrowed). */
export type ApprovalRecord = Omit<Selectable<DB["Approval"]>, "status"> & { status: ApprovalStatus };

export type NewApproval = Omit<ApprovalRecord, "status" | "always" | "decidedById" | "decidedByName" | "cardMessageId" | "decidedAt" | "createdAt">;

const asRecord = (r: Selectable<DB["Approval"]>): ApprovalRecord => ({ ...r, status: r.status as ApprovalStatus });

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

  /** Pending approvals whose waiting process is not `owner` (left by an earlier run). */
  async pendingNotOwnedBy(owner: string, limit = 500): Promise<ApprovalRecord[]> {
    const rows = await this.db.query(
      "approval-orphans",
      this.db.q.selectFrom("Approval").selectAll().where("status", "=", "pending").where("owner", "<>", owner).orderBy("createdAt").limit(limit),
    );
    return rows.map(asRecord);
  }
}
