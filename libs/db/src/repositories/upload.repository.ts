import { randomUUID } from 'node:crypto';
import { PART_NUMBERS_PER_BLOCK } from '@app/contracts';
import { Prisma, type FilePurpose, type UploadStatus } from '../generated/client';
import type { Db } from '../prisma.service';

export interface UploadRow {
  id: string;
  filename: string;
  purpose: FilePurpose;
  bytes: bigint;
  mimeType: string;
  status: UploadStatus;
  claimedUntil: Date | null;
  fileId: string | null;
  protocol: string;
  offsetBytes: bigint;
  tusMetadata: string | null;
  /** The final object's key, whose S3 multipart upload (s3UploadId) takes the parts of 5 MiB or more. */
  storageKey: string | null;
  /** Open while blocks may go into it; null once completed, staged or aborted. */
  s3UploadId: string | null;
  createdAt: Date;
  expiresAt: Date;
}

/**
 * Where a part's bytes are: a block of the upload's open multipart upload (`block`), or a stored object
 * from `objectOffset` on (its own, or the upload's staged multipart object shared by its blocks).
 */
export interface UploadPartRow {
  id: string;
  uploadId: string;
  objectId: string | null;
  block: number | null;
  objectOffset: bigint;
  bytes: bigint;
  sha256: string;
  createdAt: Date;
  storageKey: string | null;
}

/** The open multipart upload of an upload, for the storage service to complete or abort. */
export interface UploadMultipart {
  storageKey: string;
  s3UploadId: string;
}

export interface NewUpload {
  id: string;
  filename: string;
  purpose: FilePurpose;
  bytes: number;
  mimeType: string;
  createdAt: Date;
  expiresAt: Date;
  protocol?: 'openai' | 'tus';
  tusMetadata?: string | null;
  storageKey?: string | null;
  s3UploadId?: string | null;
}

/** What a part or PATCH has taken room for while it streams (see UploadRepository.reserve). */
export interface UploadReservationRow {
  id: string;
  bytes: number;
  block: number | null;
}

/** Bytes that count against an upload's caps now: its parts, and the reservations that still count. */
export interface HeldBytes {
  upload: number;
  principal: number;
}

/** What a claim on an upload found: won, or the state that refused it. */
export type UploadClaim = { won: true; upload: UploadRow } | { won: false; upload: UploadRow | null };

const UPLOAD_SELECT = {
  id: true,
  filename: true,
  purpose: true,
  bytes: true,
  mimeType: true,
  status: true,
  claimedUntil: true,
  fileId: true,
  protocol: true,
  offsetBytes: true,
  tusMetadata: true,
  storageKey: true,
  s3UploadId: true,
  createdAt: true,
  expiresAt: true,
} as const;

const PART_SELECT = {
  id: true,
  uploadId: true,
  objectId: true,
  block: true,
  objectOffset: true,
  bytes: true,
  sha256: true,
  createdAt: true,
  object: { select: { storageKey: true } },
} as const;

type SelectedPart = Prisma.UploadPartGetPayload<{ select: typeof PART_SELECT }>;
const toPart = ({ object, ...part }: SelectedPart): UploadPartRow => ({
  ...part,
  storageKey: object?.storageKey ?? null,
});

/**
 * Resumable uploads and their parts (`/v1/uploads`). Every query takes the owning principal. State
 * changes are single conditional statements, so two gateways racing on one upload cannot both win.
 */
export class UploadRepository {
  constructor(private readonly db: Db) {}

  /**
   * Creates the upload unless the principal already has `max` pending (unexpired) ones; null then. The
   * count and the insert run under the principal's advisory lock until the transaction ends, so creates
   * racing on any gateways cannot together pass the limit. Call it inside a unit of work.
   */
  async createWithin(principalId: string, upload: NewUpload, max: number): Promise<UploadRow | null> {
    await this.db.$queryRaw(Prisma.sql`SELECT pg_advisory_xact_lock(hashtext(${`uploads:${principalId}`}))::text`);
    const [{ pending }] = await this.db.$queryRaw<{ pending: bigint }[]>(Prisma.sql`
      SELECT count(*) AS pending FROM uploads
       WHERE principal_id = ${principalId}::uuid AND status IN ('pending', 'completing') AND expires_at > now()`);
    if (Number(pending) >= max) return null;
    return this.create(principalId, upload);
  }

  async create(principalId: string, upload: NewUpload): Promise<UploadRow> {
    return this.db.upload.create({
      data: { ...upload, bytes: BigInt(upload.bytes), principalId },
      select: UPLOAD_SELECT,
    });
  }

  async findForOwner(principalId: string, id: string): Promise<UploadRow | null> {
    return this.db.upload.findFirst({ where: { id, principalId }, select: UPLOAD_SELECT });
  }

  /**
   * Locks the upload row against a concurrent claim until the transaction ends (a part committing
   * then lands before the completion reads the parts, or finds the upload no longer pending).
   */
  async lockShared(principalId: string, id: string): Promise<UploadRow | null> {
    const locked = await this.db.$queryRaw<{ id: string }[]>(Prisma.sql`
      SELECT id FROM uploads WHERE id = ${id} AND principal_id = ${principalId}::uuid FOR SHARE`);
    return locked.length === 1 ? this.findForOwner(principalId, id) : null;
  }

  /**
   * Takes the upload for one completion until `until`: only a pending upload not past its expiry, or
   * one whose previous claim lapsed (its gateway died), can be taken. Of racing claims exactly one wins.
   */
  async claim(principalId: string, id: string, until: Date): Promise<UploadClaim> {
    const rows = await this.db.$queryRaw<{ id: string }[]>(Prisma.sql`
      UPDATE uploads SET status = 'completing', claimed_until = ${until}, updated_at = now()
       WHERE id = ${id} AND principal_id = ${principalId}::uuid AND expires_at > now()
         AND (claimed_until IS NULL OR claimed_until < now())
         AND status IN ('pending', 'completing')
   RETURNING id`);
    const upload = await this.findForOwner(principalId, id);
    return rows.length === 1 && upload ? { won: true, upload } : { won: false, upload };
  }

  /**
   * tus: takes the upload for one PATCH at `offset` until `until`. Only a pending tus upload whose
   * offset is `offset` and that no other PATCH (or completion) holds can be taken: of racing PATCHes
   * on any gateways exactly one wins, so the offset can never be corrupted.
   */
  async claimForPatch(principalId: string, id: string, offset: number, until: Date): Promise<boolean> {
    const rows = await this.db.$queryRaw<{ id: string }[]>(Prisma.sql`
      UPDATE uploads SET claimed_until = ${until}, updated_at = now()
       WHERE id = ${id} AND principal_id = ${principalId}::uuid AND protocol = 'tus' AND status = 'pending'
         AND expires_at > now() AND offset_bytes = ${BigInt(offset)}
         AND (claimed_until IS NULL OR claimed_until < now())
   RETURNING id`);
    return rows.length === 1;
  }

  /** tus: the PATCH holding the upload adds `bytes` at `offset` and lets go of it; false when it lost the claim. */
  async advance(principalId: string, id: string, offset: number, bytes: number): Promise<boolean> {
    const { count } = await this.db.upload.updateMany({
      where: { id, principalId, status: 'pending', offsetBytes: BigInt(offset) },
      data: { offsetBytes: BigInt(offset + bytes), claimedUntil: null },
    });
    return count === 1;
  }

  /** tus: a PATCH that kept nothing lets go of the upload. */
  async releasePatch(principalId: string, id: string): Promise<void> {
    await this.db.upload.updateMany({ where: { id, principalId, status: 'pending' }, data: { claimedUntil: null } });
  }

  /** Gives a claim back: the upload is pending again (a completion that failed its checks). */
  async unclaim(principalId: string, id: string): Promise<void> {
    await this.db.upload.updateMany({
      where: { id, principalId, status: 'completing' },
      data: { status: 'pending', claimedUntil: null },
    });
  }

  /** The claimed upload becomes completed with its file; false when the claim was lost meanwhile. */
  async markCompleted(principalId: string, id: string, fileId: string): Promise<boolean> {
    const { count } = await this.db.upload.updateMany({
      where: { id, principalId, status: 'completing' },
      data: { status: 'completed', fileId, claimedUntil: null },
    });
    return count === 1;
  }

  /** A pending upload becomes cancelled; null when it was not pending (the caller reads why). */
  async markCancelled(principalId: string, id: string): Promise<UploadRow | null> {
    const { count } = await this.db.upload.updateMany({
      where: { id, principalId, status: 'pending' },
      data: { status: 'cancelled' },
    });
    return count === 1 ? this.findForOwner(principalId, id) : null;
  }

  /**
   * The next block of the upload's open multipart upload for one part; null when the upload is not
   * pending, has no open multipart upload, or has used all `maxBlocks` (the part is then an object).
   * A block is never handed out twice, so parts written at once never share S3 part numbers.
   */
  async takeBlock(principalId: string, id: string, maxBlocks: number): Promise<number | null> {
    const rows = await this.db.$queryRaw<{ block: number }[]>(Prisma.sql`
      UPDATE uploads SET next_block = next_block + 1, updated_at = now()
       WHERE id = ${id} AND principal_id = ${principalId}::uuid AND status = 'pending'
         AND s3_upload_id IS NOT NULL AND next_block < ${maxBlocks}
   RETURNING next_block - 1 AS block`);
    return rows.length === 1 ? Number(rows[0].block) : null;
  }

  /**
   * The upload's multipart upload is closed (completed, or aborted by the caller next): no block goes
   * into it any more. Returns it, once, to the caller that closed it; null when it was not open.
   */
  async closeMultipart(principalId: string, id: string): Promise<UploadMultipart | null> {
    const rows = await this.db.$queryRaw<UploadMultipart[]>(Prisma.sql`
      UPDATE uploads u SET s3_upload_id = NULL, updated_at = now()
        FROM (SELECT id, s3_upload_id FROM uploads WHERE id = ${id} AND principal_id = ${principalId}::uuid
                 AND s3_upload_id IS NOT NULL FOR UPDATE) old
       WHERE u.id = old.id
   RETURNING u.storage_key AS "storageKey", old.s3_upload_id AS "s3UploadId"`);
    return rows[0] ?? null;
  }

  /**
   * The blocks of the upload became one stored object (`objectId`, its multipart upload completed with
   * every block): each block part now points at its bytes in it.
   */
  async markStaged(objectId: string, parts: { id: string; offset: number }[]): Promise<void> {
    for (const part of parts)
      await this.db.uploadPart.update({
        where: { id: part.id },
        data: { objectId, block: null, objectOffset: BigInt(part.offset) },
      });
  }

  /** Multipart uploads of uploads that ended (cancelled, expired) still open: closed here, for the caller to abort. */
  async closeEndedMultiparts(limit: number): Promise<UploadMultipart[]> {
    return this.db.$queryRaw<UploadMultipart[]>(Prisma.sql`
      UPDATE uploads u SET s3_upload_id = NULL, updated_at = now()
        FROM (SELECT id, s3_upload_id FROM uploads
               WHERE s3_upload_id IS NOT NULL AND status IN ('cancelled', 'expired')
               LIMIT ${limit} FOR UPDATE SKIP LOCKED) old
       WHERE u.id = old.id
   RETURNING u.storage_key AS "storageKey", old.s3_upload_id AS "s3UploadId"`);
  }

  async addPart(
    principalId: string,
    part: {
      id: string;
      uploadId: string;
      objectId: string | null;
      block?: number | null;
      bytes: number;
      sha256: string;
    },
  ): Promise<UploadPartRow> {
    return toPart(
      await this.db.uploadPart.create({
        data: { ...part, bytes: BigInt(part.bytes), principalId },
        select: PART_SELECT,
      }),
    );
  }

  /** Parts of the upload in the order they arrived. */
  async listParts(principalId: string, uploadId: string): Promise<UploadPartRow[]> {
    const parts = await this.db.uploadPart.findMany({
      where: { uploadId, principalId },
      orderBy: { seq: 'asc' },
      select: PART_SELECT,
    });
    return parts.map(toPart);
  }

  /**
   * Deletes every part row of the upload and returns their object ids, one per reference (blocks of a
   * staged object each hold one), for the caller to release. Blocks still in the multipart upload have
   * no object: they go with it.
   */
  async dropParts(principalId: string, uploadId: string): Promise<string[]> {
    await this.db.uploadReservation.deleteMany({ where: { uploadId, principalId } });
    const rows = await this.db.$queryRaw<{ objectId: string | null }[]>(Prisma.sql`
      DELETE FROM upload_parts WHERE upload_id = ${uploadId} AND principal_id = ${principalId}::uuid
   RETURNING object_id::text AS "objectId"`);
    return rows.flatMap((row) => (row.objectId ? [row.objectId] : []));
  }

  /**
   * Locks the upload row for one admission until the transaction ends, and then the principal's
   * admissions too (in that order, everywhere): racing parts of one upload, or of one principal's uploads
   * on any gateways, are admitted one at a time. Null when the principal has no such upload.
   */
  async lockForAdmission(principalId: string, id: string): Promise<UploadRow | null> {
    const locked = await this.db.$queryRaw<{ id: string }[]>(Prisma.sql`
      SELECT id FROM uploads WHERE id = ${id} AND principal_id = ${principalId}::uuid FOR UPDATE`);
    if (locked.length !== 1) return null;
    await this.db.$queryRaw(Prisma.sql`SELECT pg_advisory_xact_lock(hashtext(${`upload-bytes:${principalId}`}))::text`);
    return this.findForOwner(principalId, id);
  }

  /**
   * What counts now against the upload's own cap and against the principal's: parts kept by uploads
   * still pending (or completing), and reservations that are held or not yet expired.
   */
  async heldBytes(principalId: string, uploadId: string): Promise<HeldBytes> {
    const [row] = await this.db.$queryRaw<{ upload: bigint; principal: bigint }[]>(Prisma.sql`
      WITH live AS (
        SELECT id FROM uploads WHERE principal_id = ${principalId}::uuid AND status IN ('pending', 'completing')
      ), held AS (
        SELECT p.upload_id, p.bytes FROM upload_parts p
         WHERE p.principal_id = ${principalId}::uuid AND p.upload_id IN (SELECT id FROM live)
        UNION ALL
        SELECT r.upload_id, r.bytes FROM upload_reservations r
         WHERE r.principal_id = ${principalId}::uuid AND r.upload_id IN (SELECT id FROM live)
           AND (r.held OR r.expires_at > now())
      )
      SELECT coalesce(sum(bytes) FILTER (WHERE upload_id = ${uploadId}), 0)::bigint AS upload,
             coalesce(sum(bytes), 0)::bigint AS principal
        FROM held`);
    return { upload: Number(row.upload), principal: Number(row.principal) };
  }

  /** Takes room for one part or PATCH until `until` (renewed while it streams). Call it under lockForAdmission. */
  async reserve(
    principalId: string,
    uploadId: string,
    reservation: { bytes: number; block: number | null; until: Date },
  ): Promise<UploadReservationRow> {
    const id = randomUUID();
    await this.db.uploadReservation.create({
      data: {
        id,
        uploadId,
        principalId,
        bytes: BigInt(reservation.bytes),
        block: reservation.block,
        expiresAt: reservation.until,
      },
    });
    return { id, bytes: reservation.bytes, block: reservation.block };
  }

  /** Keeps a reservation counting until `until`; false when it is gone (swept, or its upload ended). */
  async renewReservation(id: string, until: Date): Promise<boolean> {
    const { count } = await this.db.uploadReservation.updateMany({
      where: { id, held: false },
      data: { expiresAt: until },
    });
    return count === 1;
  }

  /**
   * The reservation becomes the part its request kept: deleted in the part's transaction. False when it
   * no longer counted (it lapsed, or its upload ended): the part must not be kept then.
   */
  async settleReservation(id: string): Promise<boolean> {
    const { count } = await this.db.uploadReservation.deleteMany({
      where: { id, held: false, expiresAt: { gt: new Date() } },
    });
    return count === 1;
  }

  /** The request kept nothing, and nothing of it reached S3: its room is free again. */
  async releaseReservation(id: string): Promise<void> {
    await this.db.uploadReservation.deleteMany({ where: { id, held: false } });
  }

  /**
   * The block's bytes may be in the upload's multipart upload without being a part (S3 took them, then
   * keeping the part failed): the room stays taken until the upload ends, when they go with it.
   */
  async holdReservation(id: string): Promise<void> {
    await this.db.uploadReservation.updateMany({ where: { id }, data: { held: true } });
  }

  /**
   * Reservations whose request stopped renewing them (its gateway died): a block that the storage journal
   * shows S3 took is held at the size S3 took, every other one is deleted. Returns how many of each.
   */
  async settleLapsedReservations(now: Date): Promise<{ held: number; dropped: number }> {
    const held = await this.db.$executeRaw(Prisma.sql`
      UPDATE upload_reservations r SET held = true, bytes = p.bytes
        FROM uploads u, s3_multipart_uploads m, s3_multipart_parts p
       WHERE r.held = false AND r.expires_at <= ${now} AND r.block IS NOT NULL
         AND u.id = r.upload_id AND m.storage_key = u.storage_key AND m.s3_upload_id = u.s3_upload_id
         AND p.multipart_id = m.id AND p.part_number = r.block * ${PART_NUMBERS_PER_BLOCK} + 1`);
    const { count: dropped } = await this.db.uploadReservation.deleteMany({
      where: { held: false, expiresAt: { lte: now } },
    });
    return { held, dropped };
  }

  /**
   * Up to `limit` uploads past their expiry that are pending (or whose completion claim lapsed) become
   * expired; their part rows are deleted and the parts' object ids returned, each once however many
   * sweeps run.
   */
  async expireDue(now: Date, limit: number): Promise<string[]> {
    const expired = await this.db.$queryRaw<{ id: string }[]>(Prisma.sql`
      UPDATE uploads SET status = 'expired', claimed_until = NULL, updated_at = now()
       WHERE id IN (SELECT id FROM uploads
                     WHERE expires_at <= ${now}
                       AND (status = 'pending' OR (status = 'completing' AND claimed_until < ${now}))
                     ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
   RETURNING id`);
    if (expired.length === 0) return [];
    await this.db.uploadReservation.deleteMany({ where: { uploadId: { in: expired.map((row) => row.id) } } });
    const rows = await this.db.$queryRaw<{ objectId: string | null }[]>(Prisma.sql`
      DELETE FROM upload_parts WHERE upload_id = ANY(${expired.map((row) => row.id)}::text[])
   RETURNING object_id::text AS "objectId"`);
    return rows.flatMap((row) => (row.objectId ? [row.objectId] : []));
  }
}
