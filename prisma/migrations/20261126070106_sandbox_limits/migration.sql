-- AlterTable
ALTER TABLE "tenant_policies" ADD COLUMN     "cpu_millicores" INTEGER NOT NULL DEFAULT 1000,
ADD COLUMN     "max_file_size_mb" INTEGER NOT NULL DEFAULT 1024,
ADD COLUMN     "max_memory_mb" INTEGER NOT NULL DEFAULT 2048,
ADD COLUMN     "max_processes" INTEGER NOT NULL DEFAULT 256;
