-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "stored_object_status" AS ENUM ('UPLOADING', 'READY', 'PURGING', 'PURGED');

-- CreateEnum
CREATE TYPE "file_purpose" AS ENUM ('assistants', 'batch', 'fine-tune', 'vision', 'user_data', 'evals');

-- CreateEnum
CREATE TYPE "container_file_source" AS ENUM ('user', 'assistant');

-- CreateTable
CREATE TABLE "principals" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "principals_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" UUID NOT NULL,
    "principal_id" UUID NOT NULL,
    "key_hash" TEXT NOT NULL,
    "key_prefix" TEXT NOT NULL,
    "label" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "stored_objects" (
    "id" UUID NOT NULL,
    "principal_id" UUID NOT NULL,
    "storage_key" TEXT NOT NULL,
    "status" "stored_object_status" NOT NULL DEFAULT 'UPLOADING',
    "bytes" BIGINT NOT NULL DEFAULT 0,
    "sha256" TEXT,
    "ref_count" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "stored_objects_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "files" (
    "id" TEXT NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "principal_id" UUID NOT NULL,
    "object_id" UUID NOT NULL,
    "filename" TEXT NOT NULL,
    "bytes" BIGINT NOT NULL,
    "content_type" TEXT NOT NULL,
    "sha256" TEXT NOT NULL,
    "purpose" "file_purpose" NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3),
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "files_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sessions" (
    "id" TEXT NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "principal_id" UUID NOT NULL,
    "current_container_id" TEXT,
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "containers" (
    "id" TEXT NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "principal_id" UUID NOT NULL,
    "session_id" TEXT NOT NULL,
    "name" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "containers_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "container_files" (
    "id" TEXT NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "principal_id" UUID NOT NULL,
    "session_id" TEXT NOT NULL,
    "container_id" TEXT NOT NULL,
    "object_id" UUID NOT NULL,
    "filename" TEXT NOT NULL,
    "bytes" BIGINT NOT NULL,
    "content_type" TEXT NOT NULL,
    "sha256" TEXT NOT NULL,
    "source" "container_file_source" NOT NULL,
    "response_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "container_files_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "principals_name_key" ON "principals"("name");

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys"("key_hash");

-- CreateIndex
CREATE INDEX "api_keys_principal_id_idx" ON "api_keys"("principal_id");

-- CreateIndex
CREATE UNIQUE INDEX "stored_objects_storage_key_key" ON "stored_objects"("storage_key");

-- CreateIndex
CREATE INDEX "stored_objects_status_updated_at_idx" ON "stored_objects"("status", "updated_at");

-- CreateIndex
CREATE INDEX "files_principal_id_seq_idx" ON "files"("principal_id", "seq");

-- CreateIndex
CREATE INDEX "files_expires_at_idx" ON "files"("expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "files_seq_key" ON "files"("seq");

-- CreateIndex
CREATE INDEX "sessions_principal_id_seq_idx" ON "sessions"("principal_id", "seq");

-- CreateIndex
CREATE UNIQUE INDEX "sessions_seq_key" ON "sessions"("seq");

-- CreateIndex
CREATE INDEX "containers_principal_id_seq_idx" ON "containers"("principal_id", "seq");

-- CreateIndex
CREATE INDEX "containers_session_id_idx" ON "containers"("session_id");

-- CreateIndex
CREATE UNIQUE INDEX "containers_seq_key" ON "containers"("seq");

-- CreateIndex
CREATE INDEX "container_files_container_id_seq_idx" ON "container_files"("container_id", "seq");

-- CreateIndex
CREATE INDEX "container_files_session_id_seq_idx" ON "container_files"("session_id", "seq");

-- CreateIndex
CREATE UNIQUE INDEX "container_files_seq_key" ON "container_files"("seq");

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_principal_id_fkey" FOREIGN KEY ("principal_id") REFERENCES "principals"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "files" ADD CONSTRAINT "files_object_id_fkey" FOREIGN KEY ("object_id") REFERENCES "stored_objects"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "containers" ADD CONSTRAINT "containers_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "container_files" ADD CONSTRAINT "container_files_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "container_files" ADD CONSTRAINT "container_files_container_id_fkey" FOREIGN KEY ("container_id") REFERENCES "containers"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "container_files" ADD CONSTRAINT "container_files_object_id_fkey" FOREIGN KEY ("object_id") REFERENCES "stored_objects"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

