-- AlterTable
ALTER TABLE "tenant_policies" ADD COLUMN     "max_disk_mb" INTEGER NOT NULL DEFAULT 10240;
