import { randomUUID } from 'node:crypto';
import { Prisma } from '../generated/client';
import type { PrismaService } from '../prisma.service';
import { StoredObjectRepository } from './stored-object.repository';

export type ObjectStatus = 'UPLOADING' | 'READY' | 'PURGING' | 'PURGED';

/** A stored-object row as the checker compares it with the bucket. */
export interface ObjectRecord {
  id: string;
  storageKey: string;
  status: ObjectStatus;
  bytes: bigint;
  createdAt: Date;
  updatedAt: Date;
}

/** A row in a state the services leave by themselves; `since` is when its clock started. */
export interface UnsettledRow {
  table: 'stored_objects' | 'previews' | 'archives' | 'responses';
  id: string;
  status: string;
  since: Date;
}

/** An object whose recorded count differs from the rows that point at it, or whose status does not fit it. */
export interface ReferenceRecord {
  id: string;
  status: ObjectStatus;
  refCount: number;
  live: number;
}

/** A pending resumable upload whose S3 multipart upload is open. */
export interface OpenUploadMultipart {
  uploadId: string;
  principalId: string;
  storageKey: string;
  s3UploadId: string;
}

/** A live row whose parent is deleted (or a live session whose current container is). */
export interface OrphanedRow {
  table: 'containers' | 'container_files' | 'archives' | 'sessions';
  id: string;
  parent: string;
}

const INTERRUPTED = JSON.stringify({
  code: 'interrupted',
  message: 'The gateway running this response stopped before its agent finished.',
});

/** Live files and artifacts pointing at the object `o`: bytes only a client can give again. */
const SOURCE_REFERENCES = Prisma.sql`
  ((SELECT count(*) FROM files f WHERE f.object_id = o.id AND f.deleted_at IS NULL)
  + (SELECT count(*) FROM container_files c WHERE c.object_id = o.id AND c.deleted_at IS NULL))`;
/** Previews and archives pointing at the object `o`: caches the services can make again. */
const CACHE_REFERENCES = Prisma.sql`
  ((SELECT count(*) FROM previews p WHERE p.object_id = o.id)
  + (SELECT count(*) FROM archives a WHERE a.object_id = o.id))`;
/** The rows that point at an object, counted the way the unit of work counts references. */
const LIVE_REFERENCES = Prisma.sql`(${SOURCE_REFERENCES} + ${CACHE_REFERENCES})`;

/**
 * The consistency checker's reads across tables, and its repairs. Every repair re-checks, under a row
 * lock, the condition it was found in, so a repair that races the services changes nothing.
 */
export class ConsistencyRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** Stored objects in id order, a page at a time. */
  async objectsPage(afterId: string | null, limit: number): Promise<ObjectRecord[]> {
    return this.prisma.storedObject.findMany({
      where: afterId ? { id: { gt: afterId } } : {},
      orderBy: { id: 'asc' },
      take: limit,
      select: { id: true, storageKey: true, status: true, bytes: true, createdAt: true, updatedAt: true },
    });
  }

  /** Pending uploads whose multipart upload is open, in id order, a page at a time. */
  async openUploadMultipartsPage(afterId: string | null, limit: number): Promise<OpenUploadMultipart[]> {
    return this.prisma.$queryRaw<OpenUploadMultipart[]>(Prisma.sql`
      SELECT id AS "uploadId", principal_id::text AS "principalId", storage_key AS "storageKey",
             s3_upload_id AS "s3UploadId"
        FROM uploads
       WHERE s3_upload_id IS NOT NULL AND status = 'pending' AND id > ${afterId ?? ''}
       ORDER BY id LIMIT ${limit}`);
  }

  /** Blocks of the upload that a kept part, or a reservation that still counts, accounts for. */
  async accountedBlocks(uploadId: string): Promise<Set<number>> {
    const rows = await this.prisma.$queryRaw<{ block: number }[]>(Prisma.sql`
      SELECT block FROM upload_parts WHERE upload_id = ${uploadId} AND block IS NOT NULL
      UNION
      SELECT block FROM upload_reservations
       WHERE upload_id = ${uploadId} AND block IS NOT NULL AND (held OR expires_at > now())`);
    return new Set(rows.map((row) => Number(row.block)));
  }

  /**
   * Blocks found in a pending upload's multipart upload that nothing accounted for are held: they count
   * against its caps until it ends, when they go with the multipart upload. Only while it is still pending.
   */
  async holdStrayBlocks(upload: OpenUploadMultipart, blocks: { block: number; bytes: number }[]): Promise<boolean> {
    return this.prisma.$transaction(async (tx) => {
      const locked = await tx.$queryRaw<{ id: string }[]>(Prisma.sql`
        SELECT id FROM uploads WHERE id = ${upload.uploadId} AND status = 'pending'
           AND s3_upload_id = ${upload.s3UploadId} FOR UPDATE`);
      if (locked.length !== 1) return false;
      for (const { block, bytes } of blocks)
        await tx.uploadReservation.create({
          data: {
            id: randomUUID(),
            uploadId: upload.uploadId,
            principalId: upload.principalId,
            bytes: BigInt(bytes),
            block,
            expiresAt: new Date(),
            held: true,
          },
        });
      return true;
    });
  }

  /** Keys whose multipart upload belongs to a resumable upload still pending: open on purpose, however idle. */
  async liveUploadKeys(): Promise<Set<string>> {
    const rows = await this.prisma.upload.findMany({
      where: { status: { in: ['pending', 'completing'] }, expiresAt: { gt: new Date() }, storageKey: { not: null } },
      select: { storageKey: true },
    });
    return new Set(rows.map((row) => row.storageKey!));
  }

  async objectByKey(storageKey: string): Promise<ObjectRecord | null> {
    return this.prisma.storedObject.findUnique({
      where: { storageKey },
      select: { id: true, storageKey: true, status: true, bytes: true, createdAt: true, updatedAt: true },
    });
  }

  /** Rows in a passing state: uploads, purges, pending previews and archives, responses in progress. */
  async unsettledRows(): Promise<UnsettledRow[]> {
    return this.prisma.$queryRaw<UnsettledRow[]>(Prisma.sql`
      SELECT 'stored_objects' AS "table", id::text AS id, status::text AS status,
             CASE WHEN status = 'UPLOADING' THEN created_at ELSE updated_at END AS since
        FROM stored_objects WHERE status IN ('UPLOADING', 'PURGING')
      UNION ALL
      SELECT 'previews', id::text, status::text, updated_at FROM previews WHERE status = 'PENDING'
      UNION ALL
      SELECT 'archives', id::text, status::text, updated_at FROM archives WHERE status IN ('pending', 'building')
      UNION ALL
      SELECT 'responses', id, status::text, deadline_at FROM responses WHERE status = 'in_progress'`);
  }

  /** Objects whose count or status does not match the rows pointing at them (one snapshot of the database). */
  async referenceMismatches(): Promise<ReferenceRecord[]> {
    const rows = await this.prisma.$queryRaw<{ id: string; status: ObjectStatus; ref_count: number; live: bigint }[]>(
      Prisma.sql`
      SELECT id, status, ref_count, live FROM (
        SELECT o.id::text AS id, o.status::text AS status, o.ref_count, ${LIVE_REFERENCES} AS live
          FROM stored_objects o) AS counted
       WHERE ref_count <> live OR (status = 'READY' AND live = 0) OR (status <> 'READY' AND live > 0)`,
    );
    return rows.map((row) => ({ id: row.id, status: row.status, refCount: row.ref_count, live: Number(row.live) }));
  }

  /** Live rows under a deleted parent, and live sessions whose current container is deleted. */
  async orphanedRows(): Promise<OrphanedRow[]> {
    return this.prisma.$queryRaw<OrphanedRow[]>(Prisma.sql`
      SELECT 'containers' AS "table", c.id, c.session_id AS parent
        FROM containers c JOIN sessions s ON s.id = c.session_id
       WHERE c.deleted_at IS NULL AND s.deleted_at IS NOT NULL
      UNION ALL
      SELECT 'container_files', f.id, CASE WHEN c.deleted_at IS NOT NULL THEN c.id ELSE s.id END
        FROM container_files f JOIN containers c ON c.id = f.container_id JOIN sessions s ON s.id = f.session_id
       WHERE f.deleted_at IS NULL AND (c.deleted_at IS NOT NULL OR s.deleted_at IS NOT NULL)
      UNION ALL
      SELECT 'archives', a.id::text, a.session_id
        FROM archives a JOIN sessions s ON s.id = a.session_id WHERE s.deleted_at IS NOT NULL
      UNION ALL
      SELECT 'sessions', s.id, c.id
        FROM sessions s JOIN containers c ON c.id = s.current_container_id
       WHERE s.deleted_at IS NULL AND c.deleted_at IS NOT NULL`);
  }

  /**
   * Sets the count of an object to the rows that point at it, if it is still `expected` and the object is
   * not on its way out while rows still point at it (that is not safe to change). An object left with no
   * reference turns PURGING. Returns whether it changed and whether it is now to be purged.
   */
  async repairReferenceCount(id: string, expected: number): Promise<{ changed: boolean; purge: boolean }> {
    return this.prisma.$transaction(async (tx) => {
      const [row] = await tx.$queryRaw<{ status: ObjectStatus; ref_count: number; live: bigint }[]>(Prisma.sql`
        SELECT o.status::text AS status, o.ref_count, ${LIVE_REFERENCES} AS live
          FROM stored_objects o WHERE o.id = ${id}::uuid FOR UPDATE`);
      if (!row || row.ref_count !== expected) return { changed: false, purge: false };
      const live = Number(row.live);
      if (row.status !== 'READY' && live > 0) return { changed: false, purge: false };
      if (row.status === 'UPLOADING') return { changed: false, purge: false };
      const status = live === 0 && row.status === 'READY' ? 'PURGING' : row.status;
      await tx.$executeRaw(Prisma.sql`
        UPDATE stored_objects SET ref_count = ${live}, status = ${status}::stored_object_status, updated_at = now()
         WHERE id = ${id}::uuid`);
      return { changed: true, purge: status === 'PURGING' };
    });
  }

  /**
   * Closes live rows under deleted parents the way a delete would have: containers of deleted sessions,
   * then files of deleted containers or sessions (their references released), then archives of deleted
   * sessions. Returns the objects left with no reference, to purge.
   */
  async closeOrphanedRows(): Promise<{ closed: number; purge: string[] }> {
    return this.prisma.$transaction(async (tx) => {
      const containers = await tx.$executeRaw(Prisma.sql`
        UPDATE containers c SET deleted_at = s.deleted_at FROM sessions s
         WHERE s.id = c.session_id AND c.deleted_at IS NULL AND s.deleted_at IS NOT NULL`);
      const files = await tx.$queryRaw<{ object_id: string }[]>(Prisma.sql`
        UPDATE container_files f SET deleted_at = now() FROM containers c, sessions s
         WHERE c.id = f.container_id AND s.id = f.session_id AND f.deleted_at IS NULL
           AND (c.deleted_at IS NOT NULL OR s.deleted_at IS NOT NULL)
     RETURNING f.object_id::text AS object_id`);
      const archives = await tx.$queryRaw<{ object_id: string | null }[]>(Prisma.sql`
        DELETE FROM archives a USING sessions s WHERE a.session_id = s.id AND s.deleted_at IS NOT NULL
     RETURNING a.object_id::text AS object_id`);
      const released = [...files, ...archives].flatMap((row) => (row.object_id ? [row.object_id] : []));
      const purge = await new StoredObjectRepository(tx).release(released);
      return { closed: containers + files.length + archives.length, purge };
    });
  }

  /** Uploads left UPLOADING since before `before` turn PURGING (as the sweep does); returns their ids. */
  async reclaimUploads(ids: string[], before: Date): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.prisma.$queryRaw<{ id: string }[]>(Prisma.sql`
      UPDATE stored_objects SET status = 'PURGING', updated_at = now()
       WHERE id = ANY(${ids}::uuid[]) AND status = 'UPLOADING' AND created_at < ${before}
   RETURNING id::text AS id`);
    return rows.map((row) => row.id);
  }

  /** Whether only cached previews and archives (which the services make again on demand) hold the object. */
  async heldOnlyByCaches(id: string): Promise<boolean> {
    const [row] = await this.prisma.$queryRaw<{ sources: bigint; caches: bigint }[]>(Prisma.sql`
      SELECT ${SOURCE_REFERENCES} AS sources, ${CACHE_REFERENCES} AS caches
        FROM stored_objects o WHERE o.id = ${id}::uuid`);
    return !!row && Number(row.sources) === 0 && Number(row.caches) > 0;
  }

  /**
   * A READY object gone from the bucket that only previews and archives hold: those rows go, so the next
   * request converts or builds anew, and their references are released. Re-checked under the object's
   * lock. Returns whether rows went, and the objects left with no reference, to purge.
   */
  async dropCachesOfLostObject(id: string): Promise<{ dropped: boolean; purge: string[] }> {
    return this.prisma.$transaction(async (tx) => {
      const [row] = await tx.$queryRaw<{ status: ObjectStatus; sources: bigint }[]>(Prisma.sql`
        SELECT o.status::text AS status, ${SOURCE_REFERENCES} AS sources
          FROM stored_objects o WHERE o.id = ${id}::uuid FOR UPDATE`);
      if (row?.status !== 'READY' || Number(row.sources) > 0) return { dropped: false, purge: [] };
      const previews = await tx.$queryRaw<{ object_id: string }[]>(Prisma.sql`
        DELETE FROM previews WHERE object_id = ${id}::uuid RETURNING object_id::text AS object_id`);
      const archives = await tx.$queryRaw<{ object_id: string }[]>(Prisma.sql`
        DELETE FROM archives WHERE object_id = ${id}::uuid RETURNING object_id::text AS object_id`);
      const released = [...previews, ...archives].map((dropped) => dropped.object_id);
      if (released.length === 0) return { dropped: false, purge: [] };
      return { dropped: true, purge: await new StoredObjectRepository(tx).release(released) };
    });
  }

  /** Pending previews untouched since `before` fail as transient: the next request for one converts it again. */
  async failStalePreviews(ids: string[], before: Date): Promise<number> {
    if (ids.length === 0) return 0;
    return this.prisma.$executeRaw(Prisma.sql`
      UPDATE previews SET status = 'FAILED', error_code = 'interrupted', permanent = false, updated_at = now(),
             error_message = 'The conversion stopped without an answer; the next request tries again.'
       WHERE id = ANY(${ids}::uuid[]) AND status = 'PENDING' AND updated_at < ${before}`);
  }

  /** Unbuilt archives untouched since `before` go: the next request for one builds it again. */
  async dropStaleArchives(ids: string[], before: Date): Promise<number> {
    if (ids.length === 0) return 0;
    return this.prisma.$executeRaw(Prisma.sql`
      DELETE FROM archives WHERE id = ANY(${ids}::uuid[]) AND status IN ('pending', 'building')
         AND object_id IS NULL AND updated_at < ${before}`);
  }

  /** Responses in progress past `before` fail as interrupted (as the sweep does). */
  async failOverdueResponses(ids: string[], before: Date): Promise<number> {
    if (ids.length === 0) return 0;
    return this.prisma.$executeRaw(Prisma.sql`
      UPDATE responses SET status = 'failed', task_token_hash = NULL, completed_at = now(),
             error = ${INTERRUPTED}::jsonb
       WHERE id = ANY(${ids}) AND status = 'in_progress' AND deadline_at < ${before}`);
  }
}
