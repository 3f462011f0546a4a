-- AlterTable
ALTER TABLE "tenant_policies" ADD COLUMN     "execute_code_agent_hourly_cap" INTEGER NOT NULL DEFAULT 100,
ADD COLUMN     "execute_code_daily_cap" INTEGER NOT NULL DEFAULT 1000,
ADD COLUMN     "invocation_retention_days" INTEGER NOT NULL DEFAULT 30;

-- CreateTable
CREATE TABLE "execute_code_counters" (
    "dimension" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "window_start" TIMESTAMPTZ(3) NOT NULL,
    "count" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "execute_code_counters_pkey" PRIMARY KEY ("dimension","subject","window_start")
);

-- CreateTable
CREATE TABLE "sandbox_invocations" (
    "id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "tenant_id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "session_id" TEXT,
    "sandbox_id" TEXT,
    "scope_type" TEXT,
    "scope_id" TEXT,
    "language" TEXT NOT NULL,
    "executed_code_hash" TEXT NOT NULL,
    "stdout_bytes" BIGINT NOT NULL DEFAULT 0,
    "stderr_bytes" BIGINT NOT NULL DEFAULT 0,
    "stdout_truncated" BOOLEAN NOT NULL DEFAULT false,
    "stderr_truncated" BOOLEAN NOT NULL DEFAULT false,
    "exit_status" TEXT NOT NULL,
    "failure_reason" TEXT,
    "duration_ms" INTEGER NOT NULL,
    "purge_after" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "sandbox_invocations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sandbox_agent_counters" (
    "sandbox_id" TEXT NOT NULL,
    "boot_id" TEXT NOT NULL,
    "commands_run" BIGINT NOT NULL,
    "file_bytes_in" BIGINT NOT NULL,
    "file_bytes_out" BIGINT NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "sandbox_agent_counters_pkey" PRIMARY KEY ("sandbox_id")
);

-- CreateTable
CREATE TABLE "tenant_usage_days" (
    "tenant_id" TEXT NOT NULL,
    "day" DATE NOT NULL,
    "commands_run" BIGINT NOT NULL DEFAULT 0,
    "file_bytes_in" BIGINT NOT NULL DEFAULT 0,
    "file_bytes_out" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "tenant_usage_days_pkey" PRIMARY KEY ("tenant_id","day")
);

-- CreateIndex
CREATE INDEX "sandbox_invocations_tenant_id_created_at_idx" ON "sandbox_invocations"("tenant_id", "created_at");

-- CreateIndex
CREATE INDEX "sandbox_invocations_purge_after_idx" ON "sandbox_invocations"("purge_after");

-- Caps are counts; 0 is the kill switch, a negative cap means nothing.
ALTER TABLE "tenant_policies"
  ADD CONSTRAINT "tenant_policies_execute_code_caps_check"
    CHECK ("execute_code_daily_cap" >= 0 AND "execute_code_agent_hourly_cap" >= 0),
  ADD CONSTRAINT "tenant_policies_invocation_retention_check"
    CHECK ("invocation_retention_days" BETWEEN 1 AND 180);

ALTER TABLE "execute_code_counters"
  ADD CONSTRAINT "execute_code_counters_dimension_check"
    CHECK ("dimension" IN ('tenant_daily', 'agent_hourly')),
  ADD CONSTRAINT "execute_code_counters_count_check" CHECK ("count" >= 0);

-- The audit of execute_code (docs/execute-code.md "Audit"): retention can never exceed
-- 180 days, whatever a tenant's policy says, and a row is never rewritten.
ALTER TABLE "sandbox_invocations"
  ADD CONSTRAINT "sandbox_invocations_retention_check"
    CHECK ("purge_after" <= "created_at" + INTERVAL '180 days'),
  ADD CONSTRAINT "sandbox_invocations_exit_status_check"
    CHECK ("exit_status" IN ('ok', 'error', 'timeout', 'oom', 'cap_exceeded', 'provisioning')),
  ADD CONSTRAINT "sandbox_invocations_code_hash_check"
    CHECK ("executed_code_hash" ~ '^[0-9a-f]{64}$');

CREATE FUNCTION "sandbox_invocations_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'sandbox_invocations is append-only';
END
$$;

CREATE TRIGGER "sandbox_invocations_no_update" BEFORE UPDATE ON "sandbox_invocations"
  FOR EACH ROW EXECUTE FUNCTION "sandbox_invocations_append_only"();
