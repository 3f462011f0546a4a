-- CreateTable
CREATE TABLE "sandbox_state_changes" (
    "id" BIGSERIAL NOT NULL,
    "sandbox_id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "state" "SandboxState" NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "sandbox_state_changes_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "sandbox_state_changes_tenant_id_at_idx" ON "sandbox_state_changes"("tenant_id", "at");

-- CreateIndex
CREATE INDEX "sandbox_state_changes_sandbox_id_at_idx" ON "sandbox_state_changes"("sandbox_id", "at");

-- Usage accounting (docs/admin.md "Usage"): every state a sandbox enters, recorded by the
-- database itself in the transaction that changes `sandboxes.state`, so no code path
-- (negotiation, reaper, admin actions, release, failure) can change a state unrecorded.
-- The time is the state's own stamp (`<state>_at`, the broker's clock), `created_at`
-- for provisioning.
CREATE FUNCTION "sandbox_state_change"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "sandbox_state_changes" ("sandbox_id", "tenant_id", "state", "at")
  VALUES (NEW."id", NEW."tenant_id", NEW."state", COALESCE(CASE NEW."state"
    WHEN 'provisioning' THEN NEW."created_at"
    WHEN 'active' THEN NEW."active_at"
    WHEN 'idle' THEN NEW."idle_at"
    WHEN 'suspended' THEN NEW."suspended_at"
    WHEN 'terminated' THEN NEW."terminated_at"
    WHEN 'failed' THEN NEW."failed_at"
  END, CURRENT_TIMESTAMP));
  RETURN NULL;
END
$$;

CREATE TRIGGER "sandbox_state_inserted" AFTER INSERT ON "sandboxes"
  FOR EACH ROW EXECUTE FUNCTION "sandbox_state_change"();

CREATE TRIGGER "sandbox_state_updated" AFTER UPDATE OF "state" ON "sandboxes"
  FOR EACH ROW WHEN (OLD."state" IS DISTINCT FROM NEW."state")
  EXECUTE FUNCTION "sandbox_state_change"();

-- Sandboxes older than this migration: the last entry into each state their row stamps
-- (earlier repeats of a state are not known).
INSERT INTO "sandbox_state_changes" ("sandbox_id", "tenant_id", "state", "at")
SELECT s."id", s."tenant_id", e."state", e."at"
FROM "sandboxes" s
CROSS JOIN LATERAL (VALUES
  ('provisioning'::"SandboxState", s."created_at"),
  ('active'::"SandboxState", s."active_at"),
  ('idle'::"SandboxState", s."idle_at"),
  ('suspended'::"SandboxState", s."suspended_at"),
  ('terminated'::"SandboxState", s."terminated_at"),
  ('failed'::"SandboxState", s."failed_at")
) AS e("state", "at")
WHERE e."at" IS NOT NULL;
