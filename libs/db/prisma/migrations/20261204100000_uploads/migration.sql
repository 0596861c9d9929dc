-- Resumable uploads (issue 14): the OpenAI-shaped upload and its parts, kept by the gateway, and the
-- journal of every S3 multipart upload the storage service opens (its sweep judges abandonment from it).
-- CreateEnum
CREATE TYPE "upload_status" AS ENUM ('pending', 'completing', 'completed', 'cancelled', 'expired');

-- CreateTable
CREATE TABLE "uploads" (
    "id" TEXT NOT NULL,
    "principal_id" UUID NOT NULL,
    "filename" TEXT NOT NULL,
    "purpose" "file_purpose" NOT NULL,
    "bytes" BIGINT NOT NULL,
    "mime_type" TEXT NOT NULL,
    "status" "upload_status" NOT NULL DEFAULT 'pending',
    "claimed_until" TIMESTAMPTZ(3),
    "file_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "uploads_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "upload_parts" (
    "id" TEXT NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "upload_id" TEXT NOT NULL,
    "principal_id" UUID NOT NULL,
    "object_id" UUID NOT NULL,
    "bytes" BIGINT NOT NULL,
    "sha256" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "upload_parts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "s3_multipart_uploads" (
    "id" UUID NOT NULL,
    "storage_key" TEXT NOT NULL,
    "s3_upload_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_activity_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "s3_multipart_uploads_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "s3_multipart_parts" (
    "multipart_id" UUID NOT NULL,
    "part_number" INTEGER NOT NULL,
    "bytes" BIGINT NOT NULL,
    "etag" TEXT NOT NULL,
    "stored_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "s3_multipart_parts_pkey" PRIMARY KEY ("multipart_id", "part_number")
);

-- CreateIndex
CREATE INDEX "uploads_status_expires_at_idx" ON "uploads"("status", "expires_at");
CREATE INDEX "uploads_principal_id_idx" ON "uploads"("principal_id");
CREATE UNIQUE INDEX "upload_parts_seq_key" ON "upload_parts"("seq");
CREATE INDEX "upload_parts_upload_id_seq_idx" ON "upload_parts"("upload_id", "seq");
CREATE INDEX "upload_parts_object_id_idx" ON "upload_parts"("object_id");
CREATE UNIQUE INDEX "s3_multipart_uploads_s3_upload_id_key" ON "s3_multipart_uploads"("s3_upload_id");
CREATE INDEX "s3_multipart_uploads_last_activity_at_idx" ON "s3_multipart_uploads"("last_activity_at");

-- AddForeignKey
ALTER TABLE "upload_parts" ADD CONSTRAINT "upload_parts_upload_id_fkey" FOREIGN KEY ("upload_id") REFERENCES "uploads"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "upload_parts" ADD CONSTRAINT "upload_parts_object_id_fkey" FOREIGN KEY ("object_id") REFERENCES "stored_objects"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "s3_multipart_parts" ADD CONSTRAINT "s3_multipart_parts_multipart_id_fkey" FOREIGN KEY ("multipart_id") REFERENCES "s3_multipart_uploads"("id") ON DELETE CASCADE ON UPDATE CASCADE;
