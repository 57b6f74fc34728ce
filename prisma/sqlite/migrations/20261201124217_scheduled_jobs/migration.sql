-- CreateTable
CREATE TABLE "ScheduledJob" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "conversation" TEXT NOT NULL,
    "target" TEXT NOT NULL,
    "address" TEXT NOT NULL,
    "platform" TEXT NOT NULL,
    "botId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "spec" TEXT NOT NULL,
    "timezone" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "text" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "nextRunAt" DATETIME,
    "failures" INTEGER NOT NULL DEFAULT 0,
    "lastRunAt" DATETIME,
    "lastStatus" TEXT,
    "lastError" TEXT,
    "claimOwner" TEXT,
    "claimedAt" DATETIME,
    "claimAttempts" INTEGER NOT NULL DEFAULT 0,
    "sessionId" TEXT,
    "createdBy" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "JobRun" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "jobId" TEXT NOT NULL,
    "dueAt" DATETIME NOT NULL,
    "status" TEXT NOT NULL,
    "deliveryId" TEXT,
    "error" TEXT,
    "owner" TEXT,
    "startedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" DATETIME
);

-- CreateIndex
CREATE INDEX "ScheduledJob_status_nextRunAt_idx" ON "ScheduledJob"("status", "nextRunAt");

-- CreateIndex
CREATE INDEX "ScheduledJob_conversation_status_idx" ON "ScheduledJob"("conversation", "status");

-- CreateIndex
CREATE INDEX "JobRun_status_idx" ON "JobRun"("status");

-- CreateIndex
CREATE UNIQUE INDEX "JobRun_jobId_dueAt_key" ON "JobRun"("jobId", "dueAt");
