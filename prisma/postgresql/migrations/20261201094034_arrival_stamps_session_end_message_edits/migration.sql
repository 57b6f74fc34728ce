-- AlterTable
ALTER TABLE "InboundEvent" ADD COLUMN     "arrivalSessionId" TEXT;

-- AlterTable
ALTER TABLE "Message" ADD COLUMN     "deletedAt" TIMESTAMP(3),
ADD COLUMN     "editedAt" TIMESTAMP(3),
ADD COLUMN     "sourceId" TEXT;

-- AlterTable
ALTER TABLE "Session" ADD COLUMN     "endReason" TEXT;

-- CreateIndex
CREATE INDEX "Message_sourceId_idx" ON "Message"("sourceId");
