-- AlterTable
ALTER TABLE "sandboxes" ADD COLUMN     "host_instance" TEXT;
