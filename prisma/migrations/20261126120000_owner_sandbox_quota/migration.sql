-- AlterTable
ALTER TABLE "tenant_policies" ADD COLUMN     "max_sandboxes_per_owner" INTEGER;
