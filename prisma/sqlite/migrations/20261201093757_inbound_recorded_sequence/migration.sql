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
    "conversation" TEXT NOT NULL DEFAULT '',
    "seq" BIGINT NOT NULL DEFAULT 0
);
-- Existing events keep the order they had (recording time, then id) as their sequence.
INSERT INTO "new_InboundEvent" ("botId", "conversation", "envelope", "eventId", "id", "note", "occurredAt", "platform", "processedAt", "receivedAt", "sessionId", "status", "seq") SELECT "botId", "conversation", "envelope", "eventId", "id", "note", "occurredAt", "platform", "processedAt", "receivedAt", "sessionId", "status", ROW_NUMBER() OVER (ORDER BY "receivedAt", "id") FROM "InboundEvent";
DROP TABLE "InboundEvent";
ALTER TABLE "new_InboundEvent" RENAME TO "InboundEvent";
CREATE INDEX "InboundEvent_status_seq_idx" ON "InboundEvent"("status", "seq");
CREATE INDEX "InboundEvent_conversation_status_seq_idx" ON "InboundEvent"("conversation", "status", "seq");
CREATE INDEX "InboundEvent_status_receivedAt_idx" ON "InboundEvent"("status", "receivedAt");
CREATE UNIQUE INDEX "InboundEvent_platform_botId_eventId_key" ON "InboundEvent"("platform", "botId", "eventId");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
