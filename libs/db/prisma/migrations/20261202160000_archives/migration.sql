-- Session archives: one row per session and manifest (the exact set of artifacts), built by the worker.
-- CreateEnum
CREATE TYPE "archive_status" AS ENUM ('pending', 'building', 'ready', 'failed');

-- CreateTable
CREATE TABLE "archives" (
    "id" UUID NOT NULL,
    "principal_id" UUID NOT NULL,
    "session_id" TEXT NOT NULL,
    "manifest_hash" TEXT NOT NULL,
    "status" "archive_status" NOT NULL DEFAULT 'pending',
    "files_total" INTEGER NOT NULL,
    "bytes_total" BIGINT NOT NULL,
    "files_done" INTEGER NOT NULL DEFAULT 0,
    "bytes_done" BIGINT NOT NULL DEFAULT 0,
    "object_id" UUID,
    "error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "archives_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "archives_object_id_idx" ON "archives"("object_id");

-- CreateIndex
CREATE UNIQUE INDEX "archives_session_id_manifest_hash_key" ON "archives"("session_id", "manifest_hash");

-- AddForeignKey
ALTER TABLE "archives" ADD CONSTRAINT "archives_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "archives" ADD CONSTRAINT "archives_object_id_fkey" FOREIGN KEY ("object_id") REFERENCES "stored_objects"("id") ON DELETE SET NULL ON UPDATE CASCADE;
