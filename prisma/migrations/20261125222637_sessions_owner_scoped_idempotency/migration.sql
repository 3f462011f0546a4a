-- DropIndex
DROP INDEX "sandbox_one_live_per_scope";

-- DropIndex
DROP INDEX "binding_one_live_per_scope_actor";

-- CreateTable
CREATE TABLE "idempotency_records" (
    "tenant_id" TEXT NOT NULL,
    "principal_id" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "request_hash" TEXT NOT NULL,
    "status" INTEGER,
    "response_cipher" BYTEA,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "idempotency_records_pkey" PRIMARY KEY ("tenant_id","principal_id","key")
);

-- CreateIndex
CREATE INDEX "idempotency_records_expires_at_idx" ON "idempotency_records"("expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "sandbox_one_live_per_scope" ON "sandboxes"("tenant_id", "owner_id", "scope_type", "scope_id", "live");

-- CreateIndex
CREATE UNIQUE INDEX "binding_one_live_per_scope_actor" ON "session_bindings"("tenant_id", "owner_id", "scope_type", "scope_id", "actor_type", "actor_id", "live");
