-- CreateTable
CREATE TABLE "RateBudget" (
    "key" TEXT NOT NULL,
    "tokens" DOUBLE PRECISION NOT NULL,
    "refilledAtMs" DOUBLE PRECISION NOT NULL,
    "granted" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "RateBudget_pkey" PRIMARY KEY ("key")
);
