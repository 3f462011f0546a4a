-- CreateTable
CREATE TABLE "warm_sandboxes" (
    "id" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "template" TEXT NOT NULL DEFAULT 'default',
    "environment" "NetworkEnvironment" NOT NULL,
    "host_instance" TEXT NOT NULL,
    "provider_ref" TEXT,
    "http_base_url" TEXT NOT NULL,
    "ws_base_url" TEXT NOT NULL,
    "workspace_path" TEXT NOT NULL,
    "signing_key_cipher" BYTEA NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "warm_sandboxes_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "warm_sandboxes_host_instance_provider_template_environment__idx" ON "warm_sandboxes"("host_instance", "provider", "template", "environment", "created_at");
