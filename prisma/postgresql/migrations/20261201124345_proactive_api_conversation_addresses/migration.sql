-- CreateTable
CREATE TABLE "ConversationAddress" (
    "key" TEXT NOT NULL,
    "platform" TEXT NOT NULL,
    "botId" TEXT NOT NULL,
    "chatId" TEXT NOT NULL,
    "threadId" TEXT NOT NULL DEFAULT '',
    "bindingKey" TEXT NOT NULL,
    "template" TEXT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ConversationAddress_pkey" PRIMARY KEY ("key")
);

-- CreateTable
CREATE TABLE "ApiMessage" (
    "id" TEXT NOT NULL,
    "principal" TEXT NOT NULL,
    "idempotencyKey" TEXT NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "mode" TEXT NOT NULL,
    "platform" TEXT NOT NULL,
    "botId" TEXT NOT NULL,
    "deliveryId" TEXT,
    "eventId" TEXT,
    "envelope" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ApiMessage_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ConversationAddress_platform_chatId_idx" ON "ConversationAddress"("platform", "chatId");

-- CreateIndex
CREATE INDEX "ConversationAddress_bindingKey_idx" ON "ConversationAddress"("bindingKey");

-- CreateIndex
CREATE UNIQUE INDEX "ApiMessage_principal_idempotencyKey_key" ON "ApiMessage"("principal", "idempotencyKey");
