-- CreateTable
CREATE TABLE "SlackInstallation" (
    "enterpriseId" TEXT NOT NULL,
    "teamId" TEXT NOT NULL,
    "isEnterpriseInstall" BOOLEAN NOT NULL DEFAULT false,
    "teamName" TEXT,
    "enterpriseName" TEXT,
    "appId" TEXT,
    "botToken" TEXT NOT NULL,
    "botUserId" TEXT NOT NULL,
    "botId" TEXT NOT NULL,
    "botScopes" TEXT NOT NULL,
    "botRefreshToken" TEXT,
    "botExpiresAt" DATETIME,
    "installerUserId" TEXT NOT NULL,
    "userToken" TEXT,
    "userScopes" TEXT,
    "userRefreshToken" TEXT,
    "userExpiresAt" DATETIME,
    "source" TEXT NOT NULL,
    "installedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("enterpriseId", "teamId")
);

-- CreateTable
CREATE TABLE "SlackOAuthState" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "expiresAt" DATETIME NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateIndex
CREATE INDEX "SlackOAuthState_expiresAt_idx" ON "SlackOAuthState"("expiresAt");
