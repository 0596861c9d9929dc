import { randomUUID } from 'node:crypto';
import { Prisma } from '../generated/client';
import type { Db } from '../prisma.service';

export interface S3MultipartRow {
  id: string;
  storageKey: string;
  s3UploadId: string;
  lastActivityAt: Date;
}

/**
 * The journal of S3 multipart uploads, written by the storage service alone: one row per upload it
 * opens, one per part S3 took (size and ETag), removed once the upload is completed or aborted. The
 * gateway and the worker read this, never S3; the storage sweep judges abandonment from it.
 */
export class S3MultipartRepository {
  constructor(private readonly db: Db) {}

  async opened(storageKey: string, s3UploadId: string): Promise<string> {
    const id = randomUUID();
    await this.db.s3MultipartUpload.create({ data: { id, storageKey, s3UploadId } });
    return id;
  }

  /** A part S3 acknowledged; also the upload's last activity. */
  async partStored(id: string, partNumber: number, bytes: number, etag: string): Promise<void> {
    await this.db.$executeRaw(Prisma.sql`
      WITH touched AS (UPDATE s3_multipart_uploads SET last_activity_at = now() WHERE id = ${id}::uuid RETURNING id)
      INSERT INTO s3_multipart_parts (multipart_id, part_number, bytes, etag)
      SELECT id, ${partNumber}, ${BigInt(bytes)}, ${etag} FROM touched
      ON CONFLICT (multipart_id, part_number)
      DO UPDATE SET bytes = EXCLUDED.bytes, etag = EXCLUDED.etag, stored_at = now()`);
  }

  /** Completed or aborted: the row and its parts go. */
  async closed(s3UploadId: string): Promise<void> {
    await this.db.s3MultipartUpload.deleteMany({ where: { s3UploadId } });
  }

  /** The journal id of the open upload `s3UploadId` at `storageKey`; null once it was completed or aborted. */
  async idOf(storageKey: string, s3UploadId: string): Promise<string | null> {
    const row = await this.db.s3MultipartUpload.findFirst({ where: { storageKey, s3UploadId }, select: { id: true } });
    return row?.id ?? null;
  }

  async isKnown(s3UploadId: string): Promise<boolean> {
    return (await this.db.s3MultipartUpload.count({ where: { s3UploadId } })) > 0;
  }

  async partsOf(s3UploadId: string): Promise<{ partNumber: number; bytes: bigint; etag: string }[]> {
    return this.db.s3MultipartPart.findMany({
      where: { multipart: { s3UploadId } },
      orderBy: { partNumber: 'asc' },
      select: { partNumber: true, bytes: true, etag: true },
    });
  }

  /**
   * Uploads nobody is writing any more: no activity since `idleBefore`, or no activity since
   * `ownerGoneBefore` while the stored object of their key is gone or being purged (its owner failed
   * or was discarded). Age alone never qualifies: a slow upload touches its row with every part. The
   * multipart upload of a resumable upload that is still pending and unexpired is never abandoned,
   * however long its client pauses between parts.
   */
  async listAbandoned(idleBefore: Date, ownerGoneBefore: Date, limit: number): Promise<S3MultipartRow[]> {
    return this.db.$queryRaw<S3MultipartRow[]>(Prisma.sql`
      SELECT m.id::text AS id, m.storage_key AS "storageKey", m.s3_upload_id AS "s3UploadId",
             m.last_activity_at AS "lastActivityAt"
        FROM s3_multipart_uploads m
       WHERE NOT EXISTS (SELECT 1 FROM uploads u
                          WHERE u.storage_key = m.storage_key AND u.status IN ('pending', 'completing')
                            AND u.expires_at > now())
         AND (m.last_activity_at < ${idleBefore}
              OR (m.last_activity_at < ${ownerGoneBefore}
                  AND NOT EXISTS (SELECT 1 FROM stored_objects o
                                   WHERE o.storage_key = m.storage_key AND o.status IN ('UPLOADING', 'READY'))))
       ORDER BY m.last_activity_at
       LIMIT ${limit}`);
  }
}
