-- DropIndex
DROP INDEX "InboundEvent_conversation_status_receivedAt_idx";

-- AlterTable
ALTER TABLE "InboundEvent" ADD COLUMN     "seq" BIGINT NOT NULL DEFAULT 0;

-- CreateIndex
CREATE INDEX "InboundEvent_status_seq_idx" ON "InboundEvent"("status", "seq");

-- CreateIndex
CREATE INDEX "InboundEvent_conversation_status_seq_idx" ON "InboundEvent"("conversation", "status", "seq");

-- The recorded order: a sequence the INSERT draws from (src/store/inbound.ts). A standalone
-- sequence rather than the column's default, so that the Prisma model, shared with SQLite, stays
-- one file. Existing events keep the order they had (recording time, then id).
CREATE SEQUENCE "InboundEvent_seq_source" AS BIGINT;
UPDATE "InboundEvent" AS e SET "seq" = r.n FROM (SELECT "id", ROW_NUMBER() OVER (ORDER BY "receivedAt", "id") AS n FROM "InboundEvent") AS r WHERE r."id" = e."id";
SELECT setval('"InboundEvent_seq_source"', (SELECT COALESCE(MAX("seq"), 0) + 1 FROM "InboundEvent"), false);
