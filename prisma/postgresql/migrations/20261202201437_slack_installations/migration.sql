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
    "botExpiresAt" TIMESTAMP(3),
    "installerUserId" TEXT NOT NULL,
    "userToken" TEXT,
    "userScopes" TEXT,
    "userRefreshToken" TEXT,
    "userExpiresAt" TIMESTAMP(3),
    "source" TEXT NOT NULL,
    "installedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "SlackInstallation_pkey" PRIMARY KEY ("enterpriseId","teamId")
);

-- CreateTable
CREATE TABLE "SlackOAuthState" (
    "id" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "SlackOAuthState_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "SlackOAuthState_expiresAt_idx" ON "SlackOAuthState"("expiresAt");
