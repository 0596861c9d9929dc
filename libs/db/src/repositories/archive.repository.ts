import type { Manifest } from '@app/contracts';
import { Prisma } from '../generated/client';
import type { Db } from '../prisma.service';

export type ArchiveStatus = 'pending' | 'building' | 'ready' | 'failed';

export interface ArchiveRow {
  id: string;
  sessionId: string;
  manifestHash: string;
  status: ArchiveStatus;
  filesTotal: number;
  bytesTotal: bigint;
  filesDone: number;
  bytesDone: bigint;
  error: string | null;
  createdAt: Date;
  /** When the status last changed (for a failed build: when it failed). */
  updatedAt: Date;
  /** The ZIP in the bucket, once ready. */
  object: { storageKey: string; bytes: bigint; sha256: string | null } | null;
}

/** What the worker needs to build an archive: the row names its owner, session and manifest. */
export interface ArchiveBuild {
  id: string;
  principalId: string;
  sessionId: string;
  manifestHash: string;
  status: ArchiveStatus;
  filesTotal: number;
  bytesTotal: bigint;
  /** False once its session was deleted: there is nothing to build. */
  sessionLive: boolean;
}

const SELECT = {
  id: true,
  sessionId: true,
  manifestHash: true,
  status: true,
  filesTotal: true,
  bytesTotal: true,
  filesDone: true,
  bytesDone: true,
  error: true,
  createdAt: true,
  updatedAt: true,
  object: { select: { storageKey: true, bytes: true, sha256: true } },
} as const;

/** A pending or building row untouched for this long no longer counts against its principal's limit. */
const STALE_AFTER_MS = 15 * 60_000;

export type CompleteBuildOutcome = { outcome: 'ready'; released: string[] } | { outcome: 'superseded'; released: [] };

/**
 * Archives of sessions: one row per session and manifest. The gateway asks for one and reads its
 * status; the worker builds it. Queries on user data take the owning principal.
 */
export class ArchiveRepository {
  constructor(private readonly db: Db) {}

  async findForManifest(principalId: string, sessionId: string, manifestHash: string): Promise<ArchiveRow | null> {
    return this.db.archive.findFirst({
      where: { principalId, sessionId, manifestHash, session: { deletedAt: null } },
      select: SELECT,
    });
  }

  /**
   * The archive of this manifest, created pending unless it exists; a failed one is pending again (a
   * new request is a new try). Null when the session is not a live session of the principal.
   */
  async requestBuild(principalId: string, sessionId: string, manifest: Manifest): Promise<ArchiveRow | null> {
    await this.db.$executeRaw(Prisma.sql`
      INSERT INTO archives (id, principal_id, session_id, manifest_hash, files_total, bytes_total)
      SELECT gen_random_uuid(), ${principalId}::uuid, s.id, ${manifest.hash},
             ${manifest.filesTotal}, ${manifest.bytesTotal}
        FROM sessions s
       WHERE s.id = ${sessionId} AND s.principal_id = ${principalId}::uuid AND s.deleted_at IS NULL
      ON CONFLICT (session_id, manifest_hash) DO UPDATE
         SET status = 'pending', error = NULL, files_done = 0, bytes_done = 0, updated_at = now()
       WHERE archives.status = 'failed'`);
    return this.findForManifest(principalId, sessionId, manifest.hash);
  }

  /**
   * Builds of the principal queued or running now (its per-principal limit, and its place in the queue):
   * of live sessions, and touched within STALE_AFTER_MS — a row a lost job left never holds a slot for ever.
   */
  async countBuilding(principalId: string): Promise<number> {
    return this.db.archive.count({
      where: {
        principalId,
        status: { in: ['pending', 'building'] },
        updatedAt: { gt: new Date(Date.now() - STALE_AFTER_MS) },
        session: { deletedAt: null },
      },
    });
  }

  /** Archives pending or building, untouched since before `before`, for the sweep to give their job again. */
  async listUnbuiltSince(before: Date, limit: number): Promise<string[]> {
    const rows = await this.db.archive.findMany({
      where: { status: { in: ['pending', 'building'] }, updatedAt: { lt: before } },
      select: { id: true },
      take: limit,
      orderBy: { updatedAt: 'asc' },
    });
    return rows.map((row) => row.id);
  }

  /** For the worker, whose job carries only the archive id; the row itself names the principal. */
  async findForBuild(id: string): Promise<ArchiveBuild | null> {
    const row = await this.db.archive.findUnique({
      where: { id },
      select: {
        id: true,
        principalId: true,
        sessionId: true,
        manifestHash: true,
        status: true,
        filesTotal: true,
        bytesTotal: true,
        session: { select: { deletedAt: true } },
      },
    });
    if (!row) return null;
    const { session, ...build } = row;
    return { ...build, sessionLive: session.deletedAt === null };
  }

  /** Starts (or restarts, after a crash or a failed try) a build; false when there is nothing to build. */
  async claimForBuild(principalId: string, id: string): Promise<boolean> {
    const { count } = await this.db.archive.updateMany({
      where: { id, principalId, status: { in: ['pending', 'building', 'failed'] } },
      data: { status: 'building', filesDone: 0, bytesDone: BigInt(0), error: null },
    });
    return count === 1;
  }

  /** Records a build's progress; false when the row is no longer building (deleted or superseded meanwhile). */
  async reportProgress(principalId: string, id: string, filesDone: number, bytesDone: number): Promise<boolean> {
    const { count } = await this.db.archive.updateMany({
      where: { id, principalId, status: 'building' },
      data: { filesDone, bytesDone: BigInt(bytesDone) },
    });
    return count === 1;
  }

  /**
   * Keeps a finished build: the row, still building, turns ready with its object. The caller has locked
   * the live session (exclusive), so a concurrent delete of the session or of an artifact waits and then
   * removes this archive too. Older archives of the session are superseded: their rows go and their
   * object ids are returned, to release in the same unit of work.
   */
  async completeBuild(
    principalId: string,
    id: string,
    objectId: string,
    progress: { filesDone: number; bytesDone: number },
  ): Promise<CompleteBuildOutcome> {
    const mine = await this.db.archive.updateManyAndReturn({
      where: { id, principalId, status: 'building' },
      data: {
        status: 'ready',
        objectId,
        filesDone: progress.filesDone,
        bytesDone: BigInt(progress.bytesDone),
        completedAt: new Date(),
        error: null,
      },
      select: { createdAt: true, sessionId: true },
    });
    if (mine.length === 0) return { outcome: 'superseded', released: [] };
    const stale = await this.db.$queryRaw<{ objectId: string | null }[]>(Prisma.sql`
      DELETE FROM archives
       WHERE session_id = ${mine[0].sessionId} AND principal_id = ${principalId}::uuid
         AND id <> ${id}::uuid AND created_at <= ${mine[0].createdAt}
   RETURNING object_id::text AS "objectId"`);
    return { outcome: 'ready', released: stale.flatMap((row) => (row.objectId ? [row.objectId] : [])) };
  }

  /** A build that gave up after its last try; the next request for it starts over. */
  async markFailed(principalId: string, id: string, error: string): Promise<void> {
    await this.db.archive.updateMany({
      where: { id, principalId, status: { in: ['pending', 'building'] } },
      data: { status: 'failed', error: error.slice(0, 1000) },
    });
  }

  /**
   * A ready archive whose ZIP left the bucket: the row goes, so the next request builds anew. Returns the
   * ZIP object's id (to release in the same unit of work), or nothing if another request dropped it first.
   */
  async dropLost(principalId: string, id: string): Promise<string[]> {
    const rows = await this.db.$queryRaw<{ objectId: string | null }[]>(Prisma.sql`
      DELETE FROM archives WHERE id = ${id}::uuid AND principal_id = ${principalId}::uuid AND status = 'ready'
   RETURNING object_id::text AS "objectId"`);
    return rows.flatMap((row) => (row.objectId ? [row.objectId] : []));
  }

  /** A row whose manifest no longer matches its session, or whose session is gone, before it holds an object. */
  async removeUnbuilt(principalId: string, id: string): Promise<void> {
    await this.db.archive.deleteMany({ where: { id, principalId, objectId: null } });
  }

  /**
   * Every archive of the session goes (with the session, or with an artifact or container of it, whose
   * bytes the archives hold); their objects' ids are returned to release in the same unit of work.
   */
  async deleteForSession(principalId: string, sessionId: string): Promise<string[]> {
    const rows = await this.db.$queryRaw<{ objectId: string | null }[]>(Prisma.sql`
      DELETE FROM archives WHERE session_id = ${sessionId} AND principal_id = ${principalId}::uuid
   RETURNING object_id::text AS "objectId"`);
    return rows.flatMap((row) => (row.objectId ? [row.objectId] : []));
  }

  /**
   * Safety net for the sweep: a row a racing request created as its session was being deleted. Rows
   * go; their objects' ids are returned to release.
   */
  async deleteOfDeletedSessions(): Promise<string[]> {
    const rows = await this.db.$queryRaw<{ objectId: string | null }[]>(Prisma.sql`
      DELETE FROM archives a USING sessions s
       WHERE a.session_id = s.id AND s.deleted_at IS NOT NULL
   RETURNING a.object_id::text AS "objectId"`);
    return rows.flatMap((row) => (row.objectId ? [row.objectId] : []));
  }
}
