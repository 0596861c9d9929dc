import { Prisma, type PreviewStatus } from '../generated/client';
import type { Db } from '../prisma.service';

export interface PreviewRow {
  id: string;
  sha256: string;
  format: string;
  version: number;
  status: PreviewStatus;
  generation: number;
  sourceObjectId: string;
  sourceFilename: string;
  sourceContentType: string;
  objectId: string | null;
  bytes: bigint | null;
  pdfSha256: string | null;
  converter: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  permanent: boolean;
  /** The PDF's key once READY. */
  storageKey: string | null;
}

const SELECT = {
  id: true,
  sha256: true,
  format: true,
  version: true,
  status: true,
  generation: true,
  sourceObjectId: true,
  sourceFilename: true,
  sourceContentType: true,
  objectId: true,
  bytes: true,
  pdfSha256: true,
  converter: true,
  errorCode: true,
  errorMessage: true,
  permanent: true,
  object: { select: { storageKey: true } },
} as const;

type Selected = Prisma.PreviewGetPayload<{ select: typeof SELECT }>;
const toRow = ({ object, ...row }: Selected): PreviewRow => ({ ...row, storageKey: object?.storageKey ?? null });

export interface PreviewKey {
  sha256: string;
  format: string;
  version: number;
}

export interface PreviewSource {
  objectId: string;
  filename: string;
  contentType: string;
}

export interface PreviewFailure {
  code: string;
  message: string;
  permanent: boolean;
}

/** A pending row untouched for this long no longer counts against its principal's limit. */
const STALE_AFTER_MS = 15 * 60_000;

/** Cached PDF previews, per principal and content. */
export class PreviewRepository {
  constructor(private readonly db: Db) {}

  /**
   * The row for this content, created PENDING on first sight (concurrent callers get the same row).
   * Read first: a cached preview, the common case, costs one indexed SELECT and no write.
   */
  async findOrCreate(principalId: string, key: PreviewKey, source: PreviewSource): Promise<PreviewRow> {
    const where = { principalId_sha256_format_version: { principalId, ...key } };
    const existing = await this.db.preview.findUnique({ where, select: SELECT });
    if (existing) return toRow(existing);
    try {
      return toRow(
        await this.db.preview.create({
          data: {
            principalId,
            ...key,
            sourceObjectId: source.objectId,
            sourceFilename: source.filename,
            sourceContentType: source.contentType,
          },
          select: SELECT,
        }),
      );
    } catch (error) {
      // Two first requests raced on the insert: the loser reads the winner's row.
      if ((error as { code?: string }).code !== 'P2002') throw error;
      return toRow(await this.db.preview.findUniqueOrThrow({ where, select: SELECT }));
    }
  }

  /** The row for this content of the principal, if any. */
  async find(principalId: string, key: PreviewKey): Promise<PreviewRow | null> {
    const where = { principalId_sha256_format_version: { principalId, ...key } };
    const row = await this.db.preview.findUnique({ where, select: SELECT });
    return row ? toRow(row) : null;
  }

  /**
   * Previews of the principal queued or converting now (its per-principal limit, and its place in the
   * queue), touched within STALE_AFTER_MS: a row a lost job left never holds a slot for ever.
   */
  async countPending(principalId: string): Promise<number> {
    return this.db.preview.count({
      where: { principalId, status: 'PENDING', updatedAt: { gt: new Date(Date.now() - STALE_AFTER_MS) } },
    });
  }

  /** Previews waiting since before `before`, for the sweep to give their job again (partial index on PENDING). */
  async listPendingSince(before: Date, limit: number): Promise<{ previewId: string; generation: number }[]> {
    const rows = await this.db.preview.findMany({
      where: { status: 'PENDING', updatedAt: { lt: before } },
      select: { id: true, generation: true },
      take: limit,
      orderBy: { updatedAt: 'asc' },
    });
    return rows.map((row) => ({ previewId: row.id, generation: row.generation }));
  }

  async findForOwner(principalId: string, id: string): Promise<PreviewRow | null> {
    const row = await this.db.preview.findFirst({ where: { id, principalId }, select: SELECT });
    return row ? toRow(row) : null;
  }

  /**
   * After a transient failure: PENDING again under the next generation, from a source that is live now.
   * Returns the row as it is afterwards (a concurrent caller may have retried it first).
   */
  async retry(
    principalId: string,
    id: string,
    fromGeneration: number,
    source: PreviewSource,
  ): Promise<PreviewRow | null> {
    await this.db.preview.updateMany({
      where: { id, principalId, status: 'FAILED', permanent: false, generation: fromGeneration },
      data: {
        status: 'PENDING',
        generation: { increment: 1 },
        sourceObjectId: source.objectId,
        sourceFilename: source.filename,
        sourceContentType: source.contentType,
        errorCode: null,
        errorMessage: null,
      },
    });
    return this.findForOwner(principalId, id);
  }

  /** The worker's read of a job's row (no principal: the job carries only the id). */
  async findForJob(id: string): Promise<(PreviewRow & { principalId: string }) | null> {
    const row = await this.db.preview.findUnique({ where: { id }, select: { ...SELECT, principalId: true } });
    return row ? { ...toRow(row), principalId: row.principalId } : null;
  }

  /**
   * Records the stored PDF, in the unit of work that adopts its object; false if the row went away or is not PENDING.
   */
  async markReady(
    id: string,
    generation: number,
    pdf: { objectId: string; bytes: number; sha256: string; converter: string },
  ): Promise<boolean> {
    const { count } = await this.db.preview.updateMany({
      where: { id, status: 'PENDING', generation },
      data: {
        status: 'READY',
        objectId: pdf.objectId,
        bytes: BigInt(pdf.bytes),
        pdfSha256: pdf.sha256,
        converter: pdf.converter,
        errorCode: null,
        errorMessage: null,
      },
    });
    return count === 1;
  }

  async markFailed(id: string, generation: number, failure: PreviewFailure): Promise<void> {
    await this.db.preview.updateMany({
      where: { id, status: 'PENDING', generation },
      data: {
        status: 'FAILED',
        errorCode: failure.code,
        errorMessage: failure.message.slice(0, 1000),
        permanent: failure.permanent,
      },
    });
  }

  /**
   * A READY preview whose PDF left the bucket: the row goes, so the next request converts anew. Returns
   * the PDF object's id (to release in the same unit of work), or nothing if another request dropped it first.
   */
  async dropLost(principalId: string, id: string, objectId: string): Promise<string[]> {
    const { count } = await this.db.preview.deleteMany({ where: { id, principalId, status: 'READY', objectId } });
    return count === 1 ? [objectId] : [];
  }

  /**
   * Drops previews no live artifact of their principal has the content of any more (or of an old
   * pipeline version). Returns the PDF object ids, to be released in the same unit of work.
   */
  async deleteOrphans(currentVersion: number, limit: number): Promise<string[]> {
    const rows = await this.db.$queryRaw<{ object_id: string | null }[]>(Prisma.sql`
      DELETE FROM previews WHERE id IN (
        SELECT p.id FROM previews p
         WHERE p.version <> ${currentVersion}
            OR NOT EXISTS (SELECT 1 FROM container_files c
                            WHERE c.principal_id = p.principal_id AND c.sha256 = p.sha256 AND c.deleted_at IS NULL)
         LIMIT ${limit} FOR UPDATE SKIP LOCKED)
      RETURNING object_id::text AS object_id`);
    return rows.flatMap((row) => (row.object_id ? [row.object_id] : []));
  }
}
