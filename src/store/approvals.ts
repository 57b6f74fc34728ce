import type { Database } from "./db.js";
import { toBool, toDate, toDateOrNull } from "./sql.js";

export type ApprovalStatus = "pending" | "approved" | "denied" | "expired" | "cancelled";

export interface ApprovalRecord {
  id: string;
  sessionId: string;
  platform: string;
  botId: string;
  chatId: string;
  replyTo: string;
  requesterId: string;
  requesterName: string | null;
  privateChat: boolean;
  tool: string;
  server: string | null;
  arguments: string;
  status: ApprovalStatus;
  always: boolean;
  decidedById: string | null;
  decidedByName: string | null;
  cardMessageId: string | null;
  owner: string;
  createdAt: Date;
  expiresAt: Date;
  decidedAt: Date | null;
}

export type NewApproval = Omit<ApprovalRecord, "status" | "always" | "decidedById" | "decidedByName" | "cardMessageId" | "decidedAt" | "createdAt">;

const COLUMNS = `"id","sessionId","platform","botId","chatId","replyTo","requesterId","requesterName","privateChat","tool","server","arguments","status","always","decidedById","decidedByName","cardMessageId","owner","createdAt","expiresAt","decidedAt"`;

function row(r: Record<string, unknown>): ApprovalRecord {
  return {
    ...(r as unknown as ApprovalRecord),
    privateChat: toBool(r.privateChat),
    always: toBool(r.always),
    createdAt: toDate(r.createdAt),
    expiresAt: toDate(r.expiresAt),
    decidedAt: toDateOrNull(r.decidedAt),
  };
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
      `INSERT INTO "Approval" ("id","sessionId","platform","botId","chatId","replyTo","requesterId","requesterName","privateChat","tool","server","arguments","status","always","owner","createdAt","expiresAt") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
      [
        a.id,
        a.sessionId,
        a.platform,
        a.botId,
        a.chatId,
        a.replyTo,
        a.requesterId,
        a.requesterName,
        a.privateChat,
        a.tool,
        a.server,
        a.arguments,
        "pending",
        false,
        a.owner,
        now,
        a.expiresAt,
      ],
    );
  }

  async get(id: string): Promise<ApprovalRecord | undefined> {
    const [r] = await this.db.query<Record<string, unknown>>("approval-get", `SELECT ${COLUMNS} FROM "Approval" WHERE "id" = ?`, [id]);
    return r ? row(r) : undefined;
  }

  async setCard(id: string, messageId: string): Promise<void> {
    await this.db.exec("approval-card", `UPDATE "Approval" SET "cardMessageId" = ? WHERE "id" = ?`, [messageId, id]);
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
      `UPDATE "Approval" SET "status" = ?, "always" = ?, "decidedById" = ?, "decidedByName" = ?, "decidedAt" = ? WHERE "id" = ? AND "status" = ?`,
      [d.status, d.always ?? false, d.byId ?? null, d.byName ?? null, now, id, "pending"],
    );
    return n === 1;
  }

  /** Pending approvals whose waiting process is not `owner` (left by an earlier run). */
  async pendingNotOwnedBy(owner: string, limit = 500): Promise<ApprovalRecord[]> {
    const rows = await this.db.query<Record<string, unknown>>(
      "approval-orphans",
      `SELECT ${COLUMNS} FROM "Approval" WHERE "status" = ? AND "owner" <> ? ORDER BY "createdAt" LIMIT ?`,
      ["pending", owner, limit],
    );
    return rows.map(row);
  }
}
