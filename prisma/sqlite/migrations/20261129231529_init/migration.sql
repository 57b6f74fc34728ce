-- CreateTable
CREATE TABLE "User" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "platform" TEXT NOT NULL,
    "externalId" TEXT NOT NULL,
    "displayName" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "Group" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "platform" TEXT NOT NULL,
    "externalId" TEXT NOT NULL,
    "parentId" TEXT,
    "title" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "IdentityLink" (
    "userId" TEXT NOT NULL PRIMARY KEY,
    "personId" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "Session" (
    "id" TEXT NOT NULL PRIMARY KEY,
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
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastActive" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "archived" BOOLEAN NOT NULL DEFAULT false,
    "archivedAt" DATETIME
);

-- CreateTable
CREATE TABLE "Binding" (
    "key" TEXT NOT NULL PRIMARY KEY,
    "scope" TEXT NOT NULL,
    "agentId" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "groupId" TEXT,
    "kind" TEXT NOT NULL,
    "channel" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 0,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "Message" (
    "sessionId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "role" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "meta" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("sessionId", "seq")
);

-- CreateTable
CREATE TABLE "InboundEvent" (
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
    "note" TEXT
);

-- CreateTable
CREATE TABLE "OutboundDelivery" (
    "id" TEXT NOT NULL PRIMARY KEY,
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
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" DATETIME NOT NULL,
    "sentAt" DATETIME
);

-- CreateTable
CREATE TABLE "Memory" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "scope" TEXT NOT NULL,
    "sessionId" TEXT,
    "content" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "PairingRequest" (
    "code" TEXT NOT NULL PRIMARY KEY,
    "platform" TEXT NOT NULL,
    "botId" TEXT NOT NULL,
    "channel" TEXT NOT NULL,
    "senderId" TEXT NOT NULL,
    "displayName" TEXT,
    "status" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" DATETIME NOT NULL,
    "decidedAt" DATETIME
);

-- CreateTable
CREATE TABLE "AccessGrant" (
    "platform" TEXT NOT NULL,
    "botId" TEXT NOT NULL,
    "senderId" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("platform", "botId", "senderId")
);

-- CreateTable
CREATE TABLE "AdapterState" (
    "key" TEXT NOT NULL PRIMARY KEY,
    "value" TEXT NOT NULL,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
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
