-- Parts and tus PATCHes are admitted against the upload's and the principal's caps before a byte is
-- written (issue 37): each takes a reservation under the upload's row lock, which becomes the part.
CREATE TABLE "upload_reservations" (
    "id" UUID NOT NULL,
    "upload_id" TEXT NOT NULL,
    "principal_id" UUID NOT NULL,
    "bytes" BIGINT NOT NULL,
    "block" INTEGER,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "held" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "upload_reservations_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "upload_reservations_upload_id_idx" ON "upload_reservations"("upload_id");
CREATE INDEX "upload_reservations_principal_id_idx" ON "upload_reservations"("principal_id");
CREATE INDEX "upload_parts_principal_id_idx" ON "upload_parts"("principal_id");

ALTER TABLE "upload_reservations" ADD CONSTRAINT "upload_reservations_upload_id_fkey" FOREIGN KEY ("upload_id") REFERENCES "uploads"("id") ON DELETE CASCADE ON UPDATE CASCADE;
