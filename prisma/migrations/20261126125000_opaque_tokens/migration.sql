-- AlterTable
ALTER TABLE "token_issuances" ADD COLUMN     "revoked_at" TIMESTAMPTZ(3),
ADD COLUMN     "token_hash" TEXT;

-- CreateIndex
CREATE UNIQUE INDEX "token_issuances_token_hash_key" ON "token_issuances"("token_hash");
