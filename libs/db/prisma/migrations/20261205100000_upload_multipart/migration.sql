-- Resumable uploads straight into one S3 multipart upload (issue 14): an upload owns the multipart upload
-- of its final key, each part of 5 MiB or more is a block of that upload's S3 part numbers, so completion
-- is one CompleteMultipartUpload. A file completed that way is "uploaded" until the worker has hashed it.
ALTER TABLE "uploads" ADD COLUMN "storage_key" TEXT;
ALTER TABLE "uploads" ADD COLUMN "s3_upload_id" TEXT;
ALTER TABLE "uploads" ADD COLUMN "next_block" INTEGER NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX "uploads_storage_key_key" ON "uploads"("storage_key");

ALTER TABLE "upload_parts" ALTER COLUMN "object_id" DROP NOT NULL;
ALTER TABLE "upload_parts" ADD COLUMN "block" INTEGER;
ALTER TABLE "upload_parts" ADD COLUMN "object_offset" BIGINT NOT NULL DEFAULT 0;

ALTER TABLE "files" ALTER COLUMN "sha256" DROP NOT NULL;
ALTER TABLE "files" ADD COLUMN "status" TEXT NOT NULL DEFAULT 'processed';
ALTER TABLE "container_files" ALTER COLUMN "sha256" DROP NOT NULL;
