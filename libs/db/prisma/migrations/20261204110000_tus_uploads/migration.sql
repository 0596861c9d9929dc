-- tus 1.0 uploads (issue 14) share the uploads table: the protocol that made them, the offset the
-- server has (the sum of its parts, advanced only by a PATCH that holds the upload's claim), and the
-- Upload-Metadata the client sent, echoed on HEAD.
ALTER TABLE "uploads" ADD COLUMN "protocol" TEXT NOT NULL DEFAULT 'openai';
ALTER TABLE "uploads" ADD COLUMN "offset_bytes" BIGINT NOT NULL DEFAULT 0;
ALTER TABLE "uploads" ADD COLUMN "tus_metadata" TEXT;
