-- AlterTable
ALTER TABLE "tenant_policies" ADD COLUMN     "allowed_capabilities" TEXT[] DEFAULT ARRAY[]::TEXT[];
