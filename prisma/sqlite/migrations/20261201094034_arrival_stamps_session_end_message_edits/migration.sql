-- AlterTable
ALTER TABLE "InboundEvent" ADD COLUMN "arrivalSessionId" TEXT;

-- AlterTable
ALTER TABLE "Message" ADD COLUMN "deletedAt" DATETIME;
ALTER TABLE "Message" ADD COLUMN "editedAt" DATETIME;
ALTER TABLE "Message" ADD COLUMN "sourceId" TEXT;

-- AlterTable
ALTER TABLE "Session" ADD COLUMN "endReason" TEXT;

-- CreateIndex
CREATE INDEX "Message_sourceId_idx" ON "Message"("sourceId");
