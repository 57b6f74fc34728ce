-- CreateTable
CREATE TABLE "RateBudget" (
    "key" TEXT NOT NULL PRIMARY KEY,
    "tokens" REAL NOT NULL,
    "refilledAtMs" REAL NOT NULL,
    "granted" INTEGER NOT NULL DEFAULT 0
);
