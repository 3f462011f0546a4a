-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "SandboxState" AS ENUM ('provisioning', 'active', 'idle', 'suspended', 'terminated', 'failed');

-- CreateEnum
CREATE TYPE "ScopeType" AS ENUM ('thread', 'workspace', 'assistant', 'deployment');

-- CreateEnum
CREATE TYPE "ActorType" AS ENUM ('human', 'agent');

-- CreateEnum
CREATE TYPE "PrincipalType" AS ENUM ('user', 'service', 'agent');

-- CreateEnum
CREATE TYPE "NetworkEnvironment" AS ENUM ('default_public', 'internal_only');

-- CreateTable
CREATE TABLE "sandboxes" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "owner_id" TEXT NOT NULL,
    "scope_type" "ScopeType" NOT NULL,
    "scope_id" TEXT NOT NULL,
    "live" BOOLEAN DEFAULT true,
    "provider" TEXT NOT NULL,
    "provider_ref" TEXT,
    "state" "SandboxState" NOT NULL DEFAULT 'provisioning',
    "environment" "NetworkEnvironment" NOT NULL DEFAULT 'default_public',
    "http_base_url" TEXT,
    "ws_base_url" TEXT,
    "signing_key_cipher" BYTEA NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "active_at" TIMESTAMPTZ(3),
    "idle_at" TIMESTAMPTZ(3),
    "suspended_at" TIMESTAMPTZ(3),
    "terminated_at" TIMESTAMPTZ(3),
    "failed_at" TIMESTAMPTZ(3),
    "failure_reason" TEXT,
    "last_heartbeat_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lease_expires_at" TIMESTAMPTZ(3) NOT NULL,
    "hard_expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "sandboxes_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "session_bindings" (
    "id" TEXT NOT NULL,
    "sandbox_id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "owner_id" TEXT NOT NULL,
    "scope_type" "ScopeType" NOT NULL,
    "scope_id" TEXT NOT NULL,
    "actor_type" "ActorType" NOT NULL,
    "actor_id" TEXT NOT NULL,
    "client_id" TEXT,
    "capabilities" TEXT[],
    "live" BOOLEAN DEFAULT true,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "released_at" TIMESTAMPTZ(3),
    "last_heartbeat_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "session_bindings_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "token_issuances" (
    "jti" TEXT NOT NULL,
    "sub" TEXT NOT NULL,
    "aud" TEXT NOT NULL,
    "scopes" TEXT[],
    "session_id" TEXT,
    "thread_id" TEXT,
    "request_id" TEXT,
    "issued_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "token_issuances_pkey" PRIMARY KEY ("jti")
);

-- CreateTable
CREATE TABLE "audit_events" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "request_id" TEXT,
    "action" TEXT NOT NULL,
    "outcome" TEXT NOT NULL,
    "tenant_id" TEXT,
    "caller_id" TEXT,
    "caller_type" TEXT,
    "actor_type" TEXT,
    "actor_id" TEXT,
    "client_id" TEXT,
    "scope_type" TEXT,
    "scope_id" TEXT,
    "session_id" TEXT,
    "sandbox_id" TEXT,
    "jti" TEXT,
    "scopes" TEXT[],
    "detail" JSONB,

    CONSTRAINT "audit_events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "tenant_policies" (
    "tenant_id" TEXT NOT NULL,
    "environment" "NetworkEnvironment" NOT NULL DEFAULT 'default_public',
    "sandbox_enabled" BOOLEAN NOT NULL DEFAULT true,
    "max_sandboxes" INTEGER NOT NULL DEFAULT 10,
    "idle_timeout_seconds" INTEGER NOT NULL DEFAULT 900,
    "hard_ttl_seconds" INTEGER NOT NULL DEFAULT 28800,
    "max_token_ttl_seconds" INTEGER NOT NULL DEFAULT 900,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "tenant_policies_pkey" PRIMARY KEY ("tenant_id")
);

-- CreateTable
CREATE TABLE "client_policies" (
    "client_id" TEXT NOT NULL,
    "sidecar_image" TEXT,
    "sidecar_audience" TEXT,
    "sidecar_scopes" TEXT[],
    "sandbox_env" JSONB NOT NULL DEFAULT '{}',
    "max_capabilities" TEXT[],
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "client_policies_pkey" PRIMARY KEY ("client_id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "hash" BYTEA NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "principal_id" TEXT NOT NULL,
    "principal_type" "PrincipalType" NOT NULL DEFAULT 'service',
    "scopes" TEXT[],
    "name" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "sandboxes_state_lease_expires_at_idx" ON "sandboxes"("state", "lease_expires_at");

-- CreateIndex
CREATE INDEX "sandboxes_tenant_id_owner_id_idx" ON "sandboxes"("tenant_id", "owner_id");

-- CreateIndex
CREATE UNIQUE INDEX "sandbox_one_live_per_scope" ON "sandboxes"("tenant_id", "scope_type", "scope_id", "live");

-- CreateIndex
CREATE INDEX "session_bindings_sandbox_id_idx" ON "session_bindings"("sandbox_id");

-- CreateIndex
CREATE INDEX "session_bindings_tenant_id_owner_id_idx" ON "session_bindings"("tenant_id", "owner_id");

-- CreateIndex
CREATE UNIQUE INDEX "binding_one_live_per_scope_actor" ON "session_bindings"("tenant_id", "scope_type", "scope_id", "actor_type", "actor_id", "live");

-- CreateIndex
CREATE INDEX "token_issuances_aud_expires_at_idx" ON "token_issuances"("aud", "expires_at");

-- CreateIndex
CREATE INDEX "token_issuances_session_id_idx" ON "token_issuances"("session_id");

-- CreateIndex
CREATE INDEX "audit_events_sandbox_id_at_idx" ON "audit_events"("sandbox_id", "at");

-- CreateIndex
CREATE INDEX "audit_events_session_id_at_idx" ON "audit_events"("session_id", "at");

-- CreateIndex
CREATE INDEX "audit_events_tenant_id_at_idx" ON "audit_events"("tenant_id", "at");

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_prefix_key" ON "api_keys"("prefix");

-- CreateIndex
CREATE INDEX "api_keys_tenant_id_idx" ON "api_keys"("tenant_id");

-- AddForeignKey
ALTER TABLE "session_bindings" ADD CONSTRAINT "session_bindings_sandbox_id_fkey" FOREIGN KEY ("sandbox_id") REFERENCES "sandboxes"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Hand-written: `live` is true or NULL, never false. The unique indexes above
-- treat NULLs as distinct, so they allow one live row per scope (per actor for
-- bindings) and any number of finished ones. A `false` would quietly open a
-- second uniqueness class. Prisma cannot express CHECK constraints.
-- (No semicolons in comments: @prisma/adapter-pg splits scripts on every one.)
ALTER TABLE "sandboxes" ADD CONSTRAINT "sandboxes_live_true_or_null" CHECK ("live");
ALTER TABLE "session_bindings" ADD CONSTRAINT "session_bindings_live_true_or_null" CHECK ("live");
