-- CreateTable
CREATE TABLE "User" (
    "id" TEXT NOT NULL,
    "platform" TEXT NOT NULL,
    "externalId" TEXT NOT NULL,
    "displayName" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "User_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Group" (
    "id" TEXT NOT NULL,
    "platform" TEXT NOT NULL,
    "externalId" TEXT NOT NULL,
    "parentId" TEXT,
    "title" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Group_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "IdentityLink" (
    "userId" TEXT NOT NULL,
    "personId" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "IdentityLink_pkey" PRIMARY KEY ("userId")
);

-- CreateTable
CREATE TABLE "Session" (
    "id" TEXT NOT NULL,
    "agentId" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "groupId" TEXT,
    "channel" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "projectId" TEXT,
    "title" TEXT,
    "parentId" TEXT,
    "persona" TEXT,
    "metadata" TEXT NOT NULL DEFAULT '{}',
    "turnCount" INTEGER NOT NULL DEFAULT 0,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastActive" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "archived" BOOLEAN NOT NULL DEFAULT false,
    "archivedAt" TIMESTAMP(3),

    CONSTRAINT "Session_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Binding" (
    "key" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "agentId" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "groupId" TEXT,
    "kind" TEXT NOT NULL,
    "channel" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 0,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Binding_pkey" PRIMARY KEY ("key")
);

-- CreateTable
CREATE TABLE "Message" (
    "sessionId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "role" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "meta" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Message_pkey" PRIMARY KEY ("sessionId","seq")
);

-- CreateTable
CREATE TABLE "InboundEvent" (
    "id" TEXT NOT NULL,
    "platform" TEXT NOT NULL,
    "botId" TEXT NOT NULL,
    "eventId" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "envelope" TEXT NOT NULL,
    "occurredAt" TIMESTAMP(3) NOT NULL,
    "receivedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "processedAt" TIMESTAMP(3),
    "sessionId" TEXT,
    "note" TEXT,

    CONSTRAINT "InboundEvent_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "OutboundDelivery" (
    "id" TEXT NOT NULL,
    "inboundId" TEXT,
    "sessionId" TEXT NOT NULL,
    "platform" TEXT NOT NULL,
    "botId" TEXT NOT NULL,
    "address" TEXT NOT NULL,
    "part" INTEGER NOT NULL DEFAULT 0,
    "text" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "platformMessageId" TEXT,
    "lastError" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "sentAt" TIMESTAMP(3),

    CONSTRAINT "OutboundDelivery_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Memory" (
    "id" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "sessionId" TEXT,
    "content" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Memory_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "PairingRequest" (
    "code" TEXT NOT NULL,
    "platform" TEXT NOT NULL,
    "botId" TEXT NOT NULL,
    "channel" TEXT NOT NULL,
    "senderId" TEXT NOT NULL,
    "displayName" TEXT,
    "status" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "decidedAt" TIMESTAMP(3),

    CONSTRAINT "PairingRequest_pkey" PRIMARY KEY ("code")
);

-- CreateTable
CREATE TABLE "AccessGrant" (
    "platform" TEXT NOT NULL,
    "botId" TEXT NOT NULL,
    "senderId" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "AccessGrant_pkey" PRIMARY KEY ("platform","botId","senderId")
);

-- CreateTable
CREATE TABLE "AdapterState" (
    "key" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "AdapterState_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE UNIQUE INDEX "User_platform_externalId_key" ON "User"("platform", "externalId");

-- CreateIndex
CREATE INDEX "Group_parentId_idx" ON "Group"("parentId");

-- CreateIndex
CREATE UNIQUE INDEX "Group_platform_externalId_key" ON "Group"("platform", "externalId");

-- CreateIndex
CREATE INDEX "IdentityLink_personId_idx" ON "IdentityLink"("personId");

-- CreateIndex
CREATE INDEX "Session_userId_agentId_lastActive_idx" ON "Session"("userId", "agentId", "lastActive");

-- CreateIndex
CREATE INDEX "Session_groupId_idx" ON "Session"("groupId");

-- CreateIndex
CREATE INDEX "Session_parentId_idx" ON "Session"("parentId");

-- CreateIndex
CREATE INDEX "Session_archived_lastActive_idx" ON "Session"("archived", "lastActive");

-- CreateIndex
CREATE INDEX "Binding_sessionId_idx" ON "Binding"("sessionId");

-- CreateIndex
CREATE INDEX "Binding_userId_agentId_idx" ON "Binding"("userId", "agentId");

-- CreateIndex
CREATE INDEX "InboundEvent_status_receivedAt_idx" ON "InboundEvent"("status", "receivedAt");

-- CreateIndex
CREATE UNIQUE INDEX "InboundEvent_platform_botId_eventId_key" ON "InboundEvent"("platform", "botId", "eventId");

-- CreateIndex
CREATE INDEX "OutboundDelivery_status_createdAt_idx" ON "OutboundDelivery"("status", "createdAt");

-- CreateIndex
CREATE INDEX "OutboundDelivery_sessionId_idx" ON "OutboundDelivery"("sessionId");

-- CreateIndex
CREATE UNIQUE INDEX "OutboundDelivery_inboundId_part_key" ON "OutboundDelivery"("inboundId", "part");

-- CreateIndex
CREATE INDEX "Memory_scope_createdAt_idx" ON "Memory"("scope", "createdAt");

-- CreateIndex
CREATE INDEX "PairingRequest_channel_status_idx" ON "PairingRequest"("channel", "status");
