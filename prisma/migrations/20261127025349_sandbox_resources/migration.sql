-- AlterTable
ALTER TABLE "sandboxes" ADD COLUMN     "metadata" JSONB NOT NULL DEFAULT '{}',
ADD COLUMN     "name" TEXT,
ADD COLUMN     "template" TEXT NOT NULL DEFAULT 'default';
