-- AlterTable
ALTER TABLE "InboundEvent" ADD COLUMN     "conversation" TEXT NOT NULL DEFAULT '';

-- AlterTable
ALTER TABLE "OutboundDelivery" ADD COLUMN     "claimedAt" TIMESTAMP(3),
ADD COLUMN     "owner" TEXT;

-- CreateTable
CREATE TABLE "ConversationLease" (
    "key" TEXT NOT NULL,
    "owner" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ConversationLease_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE INDEX "InboundEvent_conversation_status_receivedAt_idx" ON "InboundEvent"("conversation", "status", "receivedAt");
