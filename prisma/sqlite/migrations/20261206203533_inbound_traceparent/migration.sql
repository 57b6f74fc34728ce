-- AlterTable
ALTER TABLE "InboundEvent" ADD COLUMN "traceparent" TEXT;
