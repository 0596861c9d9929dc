import { randomUUID } from 'node:crypto';
import { Prisma } from '../generated/client';
import type { PrismaService, Tx } from '../prisma.service';

export interface StoredObjectRow {
  id: string;
  storageKey: string;
  status: 'UPLOADING' | 'READY' | 'PURGING' | 'PURGED';
  refCount: number;
}

/** Stored objects and their reference counts. A count that reaches zero turns the object PURGING. */
export class StoredObjectRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** Records an upload before its first byte is stored, so a crash mid-upload is found and reclaimed. */
  async createUploading(principalId: string): Promise<StoredObjectRow> {
    return this.prisma.storedObject.create({
      data: { principalId, storageKey: `objects/${randomUUID()}`, status: 'UPLOADING' },
      select: { id: true, storageKey: true, status: true, refCount: true },
    });
  }

  /** Marks a finished upload READY with its first reference, inside the transaction that creates it. */
  async markReady(tx: Tx, principalId: string, id: string, bytes: number, sha256: string): Promise<void> {
    await tx.storedObject.update({ where: { id, principalId, status: 'UPLOADING' }, data: { status: 'READY', bytes: BigInt(bytes), sha256, refCount: 1 } });
  }

  /** An upload that did not finish: nothing may point at it; the purge job removes whatever reached the bucket. */
  async abandonUpload(id: string): Promise<void> {
    await this.prisma.storedObject.updateMany({ where: { id, status: 'UPLOADING' }, data: { status: 'PURGING' } });
  }

  /** Takes one more reference on a READY object; false when it is already going away. */
  async retain(tx: Tx, principalId: string, id: string): Promise<boolean> {
    const { count } = await tx.storedObject.updateMany({ where: { id, principalId, status: 'READY' }, data: { refCount: { increment: 1 } } });
    return count === 1;
  }

  /**
   * Drops one reference per listed id (an id may repeat). Returns the ids whose count reached zero:
   * they are PURGING now and must be handed to the purge queue after the transaction commits.
   */
  async release(tx: Tx, objectIds: string[]): Promise<string[]> {
    if (objectIds.length === 0) return [];
    const counts = new Map<string, number>();
    for (const id of objectIds) counts.set(id, (counts.get(id) ?? 0) + 1);
    const ids = [...counts.keys()];
    const drops = ids.map((id) => counts.get(id)!);
    type Row = { id: string; status: string };
    const rows = await tx.$queryRaw<Row[]>(Prisma.sql`
      UPDATE stored_objects AS o
         SET ref_count = GREATEST(o.ref_count - d.n, 0),
             status = CASE WHEN o.ref_count - d.n <= 0 THEN 'PURGING'::stored_object_status ELSE o.status END,
             updated_at = now()
        FROM unnest(${ids}::uuid[], ${drops}::int[]) AS d(id, n)
       WHERE o.id = d.id
   RETURNING o.id::text AS id, o.status::text AS status`);
    return rows.filter((row) => row.status === 'PURGING').map((row) => row.id);
  }

  async findForPurge(id: string): Promise<StoredObjectRow | null> {
    return this.prisma.storedObject.findUnique({ where: { id }, select: { id: true, storageKey: true, status: true, refCount: true } });
  }

  /**
   * After its bytes are deleted: removes the row, or, while deleted file rows still point at it, keeps
   * it as PURGED until those are pruned. Only an object still PURGING with no references qualifies.
   */
  async finishPurge(id: string): Promise<boolean> {
    const removed = await this.prisma.$executeRaw(Prisma.sql`
      DELETE FROM stored_objects o
       WHERE o.id = ${id}::uuid AND o.status = 'PURGING' AND o.ref_count = 0
         AND NOT EXISTS (SELECT 1 FROM files f WHERE f.object_id = o.id)
         AND NOT EXISTS (SELECT 1 FROM container_files c WHERE c.object_id = o.id)`);
    if (removed === 1) return true;
    const { count } = await this.prisma.storedObject.updateMany({ where: { id, status: 'PURGING', refCount: 0 }, data: { status: 'PURGED' } });
    return count === 1;
  }

  /** Deleted rows older than `before` are dropped, then the PURGED objects nothing points at any more. */
  async pruneTombstones(before: Date): Promise<number> {
    return this.prisma.$transaction(async (tx) => {
      await tx.containerFile.deleteMany({ where: { deletedAt: { lt: before } } });
      await tx.file.deleteMany({ where: { deletedAt: { lt: before } } });
      await tx.response.deleteMany({ where: { session: { deletedAt: { lt: before } } } });
      await tx.$executeRaw(Prisma.sql`
        DELETE FROM containers c WHERE c.deleted_at < ${before}
           AND NOT EXISTS (SELECT 1 FROM container_files f WHERE f.container_id = c.id)
           AND NOT EXISTS (SELECT 1 FROM responses r WHERE r.container_id = c.id)`);
      await tx.$executeRaw(Prisma.sql`
        DELETE FROM sessions s WHERE s.deleted_at < ${before}
           AND NOT EXISTS (SELECT 1 FROM containers c WHERE c.session_id = s.id)
           AND NOT EXISTS (SELECT 1 FROM container_files f WHERE f.session_id = s.id)
           AND NOT EXISTS (SELECT 1 FROM responses r WHERE r.session_id = s.id)
           AND NOT EXISTS (SELECT 1 FROM archives a WHERE a.session_id = s.id)`);
      return tx.$executeRaw(Prisma.sql`
        DELETE FROM stored_objects o WHERE o.status = 'PURGED'
           AND NOT EXISTS (SELECT 1 FROM files f WHERE f.object_id = o.id)
           AND NOT EXISTS (SELECT 1 FROM container_files c WHERE c.object_id = o.id)`);
    });
  }

  /** Safety net: PURGING objects whose purge job was lost (Redis down at the time, say). */
  async listPurgingSince(before: Date, limit: number): Promise<string[]> {
    const rows = await this.prisma.storedObject.findMany({ where: { status: 'PURGING', updatedAt: { lt: before } }, select: { id: true }, take: limit, orderBy: { updatedAt: 'asc' } });
    return rows.map((row) => row.id);
  }

  /** Uploads left UPLOADING by a crashed gateway become PURGING. */
  async reclaimStaleUploads(before: Date): Promise<string[]> {
    const rows = await this.prisma.$queryRaw<{ id: string }[]>(Prisma.sql`
      UPDATE stored_objects SET status = 'PURGING', updated_at = now()
       WHERE status = 'UPLOADING' AND created_at < ${before}
   RETURNING id::text AS id`);
    return rows.map((row) => row.id);
  }
}
