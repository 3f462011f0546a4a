-- AlterTable
ALTER TABLE "token_issuances" ADD COLUMN     "parent_jti" TEXT;
