-- AlterTable
ALTER TABLE "ConversationAddress" ADD COLUMN "replyChatId" TEXT;

-- AlterTable
ALTER TABLE "ScheduledJob" ADD COLUMN "principal" TEXT;

-- CreateIndex
CREATE INDEX "ConversationAddress_platform_replyChatId_idx" ON "ConversationAddress"("platform", "replyChatId");

-- CreateIndex
CREATE INDEX "ScheduledJob_principal_status_idx" ON "ScheduledJob"("principal", "status");

-- Backfill: the reply address's chat id, as the directory writes it from now on.
UPDATE "ConversationAddress" SET "replyChatId" = json_extract("template", '$.replyTo.chatId') WHERE json_valid("template");
