import { randomUUID } from 'node:crypto';
import { Prisma } from '../generated/client';
import type { Db } from '../prisma.service';

export interface StoredObjectRow {
  id: string;
  principalId: string;
  storageKey: string;
  status: 'UPLOADING' | 'READY' | 'PURGING' | 'PURGED';
  refCount: number;
  bytes: bigint;
  /** Null until measured: an object completed from an upload's blocks is hashed later by the worker. */
  sha256: string | null;
}

const SELECT = {
  id: true,
  principalId: true,
  storageKey: true,
  status: true,
  refCount: true,
  bytes: true,
  sha256: true,
} as const;

export class ReferenceCountError extends Error {
  override readonly name = 'ReferenceCountError';
}

/**
 * Stored objects and their reference counts: the life of bytes in the bucket. Only the unit of work
 * and the object stager call this; services never change a count themselves.
 */
export class StoredObjectRepository {
  constructor(private readonly db: Db) {}

  /** Records an upload before its first byte is stored, so a crash mid-upload is found and reclaimed. */
  async createUploading(principalId: string, storageKey = `objects/${randomUUID()}`): Promise<StoredObjectRow> {
    return this.db.storedObject.create({
      data: { principalId, storageKey, status: 'UPLOADING' },
      select: SELECT,
    });
  }

  async find(id: string): Promise<StoredObjectRow | null> {
    return this.db.storedObject.findUnique({ where: { id }, select: SELECT });
  }

  /** The size an object's upload recorded, or null if there is no such object (checked before reading it). */
  async sizeOf(id: string): Promise<bigint | null> {
    return (await this.db.storedObject.findUnique({ where: { id }, select: { bytes: true } }))?.bytes ?? null;
  }

  /** A finished upload becomes READY with its first reference. It must still be UPLOADING and the principal's. */
  async markReady(principalId: string, id: string, bytes: number, sha256: string | null): Promise<void> {
    const { count } = await this.db.storedObject.updateMany({
      where: { id, principalId, status: 'UPLOADING' },
      data: { status: 'READY', bytes: BigInt(bytes), sha256, refCount: 1 },
    });
    if (count !== 1) throw new ReferenceCountError(`object ${id} is not an upload of this principal in progress`);
  }

  /**
   * The SHA-256 of an object completed unhashed (a file composed from an upload's blocks), measured by
   * the worker: recorded on the object and on every file and artifact that points at it, which turns
   * such a file from "uploaded" to "processed". Returns how many files it turned.
   */
  async recordHash(id: string, sha256: string): Promise<number> {
    // Each statement only fills what is still empty, so a job that runs twice, or a copy made meanwhile, is fine.
    await this.db.containerFile.updateMany({ where: { objectId: id, sha256: null }, data: { sha256 } });
    const { count } = await this.db.file.updateMany({
      where: { objectId: id, sha256: null },
      data: { sha256, status: 'processed' },
    });
    await this.db.storedObject.updateMany({ where: { id, sha256: null }, data: { sha256 } });
    return count;
  }

  /** Objects of files still "uploaded" since before `before`: their hash job was lost, or is still running. */
  async listUnhashedSince(before: Date, limit: number): Promise<string[]> {
    const rows = await this.db.file.findMany({
      where: { status: 'uploaded', createdAt: { lt: before }, deletedAt: null },
      select: { objectId: true },
      distinct: ['objectId'],
      take: limit,
    });
    return rows.map((row) => row.objectId);
  }

  /** An upload that will not be kept: nothing may point at it; its bytes are to be deleted. */
  async abandon(id: string): Promise<void> {
    await this.db.storedObject.updateMany({ where: { id, status: 'UPLOADING' }, data: { status: 'PURGING' } });
  }

  /** Takes one more reference on a READY object of the principal; false when it is already going away. */
  async retain(principalId: string, id: string): Promise<boolean> {
    const { count } = await this.db.storedObject.updateMany({
      where: { id, principalId, status: 'READY' },
      data: { refCount: { increment: 1 } },
    });
    return count === 1;
  }

  /**
   * Drops one reference per listed id (an id may repeat). The rows are locked in id order first, so
   * two releases of overlapping sets cannot deadlock. Returns the ids whose count reached zero: they
   * are PURGING now, to be purged once the transaction commits. A count that would go below zero means
   * a reference was released twice: that is refused, and the transaction rolls back.
   */
  async release(objectIds: string[]): Promise<string[]> {
    if (objectIds.length === 0) return [];
    const counts = new Map<string, number>();
    for (const id of objectIds) counts.set(id, (counts.get(id) ?? 0) + 1);
    const ids = [...counts.keys()].sort();
    const drops = ids.map((id) => counts.get(id)!);
    const held = await this.db.$queryRaw<{ id: string; ref_count: number }[]>(Prisma.sql`
      SELECT id::text, ref_count FROM stored_objects WHERE id = ANY(${ids}::uuid[]) ORDER BY id FOR UPDATE`);
    const over = held.filter((row) => row.ref_count < counts.get(row.id)!);
    const missing = ids.filter((id) => !held.some((row) => row.id === id));
    if (over.length > 0 || missing.length > 0) {
      throw new ReferenceCountError(
        `releasing more references than held: ${[...over.map((row) => row.id), ...missing].join(', ')}`,
      );
    }
    const rows = await this.db.$queryRaw<{ id: string; status: string }[]>(Prisma.sql`
      UPDATE stored_objects AS o
         SET ref_count = o.ref_count - d.n,
             status = CASE WHEN o.ref_count - d.n = 0 THEN 'PURGING'::stored_object_status ELSE o.status END,
             updated_at = now()
        FROM unnest(${ids}::uuid[], ${drops}::int[]) AS d(id, n)
       WHERE o.id = d.id
   RETURNING o.id::text AS id, o.status::text AS status`);
    return rows.filter((row) => row.status === 'PURGING').map((row) => row.id);
  }

  /**
   * After its bytes are deleted: removes the row, or, while deleted file rows still point at it, keeps
   * it as PURGED until those are pruned. Only an object still PURGING with no references qualifies.
   */
  async finishPurge(id: string): Promise<boolean> {
    const removed = await this.db.$executeRaw(Prisma.sql`
      DELETE FROM stored_objects o
       WHERE o.id = ${id}::uuid AND o.status = 'PURGING' AND o.ref_count = 0
         AND NOT EXISTS (SELECT 1 FROM files f WHERE f.object_id = o.id)
         AND NOT EXISTS (SELECT 1 FROM container_files c WHERE c.object_id = o.id)`);
    if (removed === 1) return true;
    const { count } = await this.db.storedObject.updateMany({
      where: { id, status: 'PURGING', refCount: 0 },
      data: { status: 'PURGED' },
    });
    return count === 1;
  }

  /** Safety net: PURGING objects whose purge job was lost (Redis down at the time, say). */
  async listPurgingSince(before: Date, limit: number): Promise<string[]> {
    const rows = await this.db.storedObject.findMany({
      where: { status: 'PURGING', updatedAt: { lt: before } },
      select: { id: true },
      take: limit,
      orderBy: { updatedAt: 'asc' },
    });
    return rows.map((row) => row.id);
  }

  /** Uploads left UPLOADING by a crashed process become PURGING. */
  async reclaimStaleUploads(before: Date): Promise<string[]> {
    const rows = await this.db.$queryRaw<{ id: string }[]>(Prisma.sql`
      UPDATE stored_objects SET status = 'PURGING', updated_at = now()
       WHERE status = 'UPLOADING' AND created_at < ${before}
   RETURNING id::text AS id`);
    return rows.map((row) => row.id);
  }
}
