import { Prisma } from '../generated/client';
import type { PrismaService } from '../prisma.service';

/** Housekeeping across tables, for the worker's sweep. */
export class MaintenanceRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * Deleted rows older than `before` are dropped for good: files, container files, containers and
   * sessions (their responses with them) that nothing still points at; then the PURGED objects no
   * row points at any more. Until then a deleted row anchors list cursors. Returns the objects dropped.
   */
  async pruneDeletedRows(before: Date): Promise<number> {
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
}
