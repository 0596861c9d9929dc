-- Responses: tasks run by agents in a session's container, with their task tokens and outputs.
-- CreateEnum
CREATE TYPE "response_status" AS ENUM ('in_progress', 'completed', 'failed');

-- CreateTable
CREATE TABLE "responses" (
    "id" TEXT NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "principal_id" UUID NOT NULL,
    "session_id" TEXT NOT NULL,
    "container_id" TEXT NOT NULL,
    "agent" TEXT NOT NULL,
    "status" "response_status" NOT NULL DEFAULT 'in_progress',
    "input_file_ids" TEXT[],
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "output" JSONB,
    "error" JSONB,
    "task_token_hash" TEXT,
    "deadline_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "responses_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "responses_task_token_hash_key" ON "responses"("task_token_hash");

-- CreateIndex
CREATE INDEX "responses_principal_id_seq_idx" ON "responses"("principal_id", "seq");

-- CreateIndex
CREATE INDEX "responses_session_id_idx" ON "responses"("session_id");

-- CreateIndex
CREATE INDEX "responses_container_id_idx" ON "responses"("container_id");

-- CreateIndex
CREATE INDEX "responses_status_deadline_at_idx" ON "responses"("status", "deadline_at");

-- CreateIndex
CREATE UNIQUE INDEX "responses_seq_key" ON "responses"("seq");


-- AddForeignKey
ALTER TABLE "responses" ADD CONSTRAINT "responses_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "responses" ADD CONSTRAINT "responses_container_id_fkey" FOREIGN KEY ("container_id") REFERENCES "containers"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
