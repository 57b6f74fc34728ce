-- CreateIndex
CREATE INDEX "InboundEvent_seq_idx" ON "InboundEvent"("seq");
