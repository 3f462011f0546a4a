-- AlterTable
ALTER TABLE "sandboxes" ADD COLUMN     "workspace_path" TEXT NOT NULL DEFAULT '/workspace';
