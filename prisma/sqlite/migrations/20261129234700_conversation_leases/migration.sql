-- AlterTable
ALTER TABLE "OutboundDelivery" ADD COLUMN "claimedAt" DATETIME;
ALTER TABLE "OutboundDelivery" ADD COLUMN "owner" TEXT;

-- CreateTable
CREATE TABLE "ConversationLease" (
    "key" TEXT NOT NULL PRIMARY KEY,
    "owner" TEXT NOT NULL,
    "expiresAt" DATETIME NOT NULL
);

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_InboundEvent" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "platform" TEXT NOT NULL,
    "botId" TEXT NOT NULL,
    "eventId" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "envelope" TEXT NOT NULL,
    "occurredAt" DATETIME NOT NULL,
    "receivedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "processedAt" DATETIME,
    "sessionId" TEXT,
    "note" TEXT,
    "conversation" TEXT NOT NULL DEFAULT ''
);
INSERT INTO "new_InboundEvent" ("botId", "envelope", "eventId", "id", "note", "occurredAt", "platform", "processedAt", "receivedAt", "sessionId", "status") SELECT "botId", "envelope", "eventId", "id", "note", "occurredAt", "platform", "processedAt", "receivedAt", "sessionId", "status" FROM "InboundEvent";
DROP TABLE "InboundEvent";
ALTER TABLE "new_InboundEvent" RENAME TO "InboundEvent";
CREATE INDEX "InboundEvent_status_receivedAt_idx" ON "InboundEvent"("status", "receivedAt");
CREATE INDEX "InboundEvent_conversation_status_receivedAt_idx" ON "InboundEvent"("conversation", "status", "receivedAt");
CREATE UNIQUE INDEX "InboundEvent_platform_botId_eventId_key" ON "InboundEvent"("platform", "botId", "eventId");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
