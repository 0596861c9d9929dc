-- Previews: cached PDF conversions per principal and content, and the converters the workers can run.
-- CreateEnum
CREATE TYPE "preview_status" AS ENUM ('PENDING', 'READY', 'FAILED');

-- CreateTable
CREATE TABLE "previews" (
    "id" UUID NOT NULL,
    "principal_id" UUID NOT NULL,
    "sha256" TEXT NOT NULL,
    "format" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "status" "preview_status" NOT NULL DEFAULT 'PENDING',
    "generation" INTEGER NOT NULL DEFAULT 0,
    "source_object_id" UUID NOT NULL,
    "source_filename" TEXT NOT NULL,
    "source_content_type" TEXT NOT NULL,
    "object_id" UUID,
    "bytes" BIGINT,
    "pdf_sha256" TEXT,
    "converter" TEXT,
    "error_code" TEXT,
    "error_message" TEXT,
    "permanent" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "previews_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "converter_status" (
    "name" TEXT NOT NULL,
    "available" BOOLEAN NOT NULL,
    "reason" TEXT,
    "checked_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "converter_status_pkey" PRIMARY KEY ("name")
);

-- CreateIndex
CREATE INDEX "previews_updated_at_idx" ON "previews"("updated_at");

-- CreateIndex
CREATE UNIQUE INDEX "previews_principal_id_sha256_format_version_key" ON "previews"("principal_id", "sha256", "format", "version");


-- AddForeignKey
ALTER TABLE "previews" ADD CONSTRAINT "previews_object_id_fkey" FOREIGN KEY ("object_id") REFERENCES "stored_objects"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- CreateIndex: the preview sweep asks whether any live artifact of the principal still has the content.
CREATE INDEX "container_files_principal_id_sha256_idx" ON "container_files"("principal_id", "sha256");
