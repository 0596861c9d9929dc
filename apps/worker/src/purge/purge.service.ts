import { Inject, Injectable } from '@nestjs/common';
import { LOGGER, PurgeProducer, StorageClient, type AppLogger } from '@app/common';
import { PREVIEW_PIPELINE_VERSION } from '@app/contracts';
import { ArchiveRepository, FileRepository, PreviewRepository, PrismaService, ResponseRepository, StoredObjectRepository } from '@app/db';

const EXPIRE_BATCH = 500;
/** A PURGING object this old with no job in sight gets one (its enqueue was lost). */
const LOST_PURGE_AFTER_MS = 60_000;
/** A response still in progress this long past its deadline lost its gateway (crash, restart). */
const OVERDUE_RESPONSE_GRACE_MS = 60_000;

export type PurgeOutcome = 'purged' | 'still-referenced' | 'gone';

/** Removes objects nothing references any more, and expires files past their expires_at. */
@Injectable()
export class PurgeService {
  constructor(
    @Inject(PrismaService) private readonly prisma: PrismaService,
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(FileRepository) private readonly files: FileRepository,
    @Inject(ResponseRepository) private readonly responses: ResponseRepository,
    @Inject(PreviewRepository) private readonly previews: PreviewRepository,
    @Inject(ArchiveRepository) private readonly archives: ArchiveRepository,
    @Inject(StorageClient) private readonly storage: StorageClient,
    @Inject(PurgeProducer) private readonly purges: PurgeProducer,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  /** Idempotent: re-reads the row, deletes the bytes, then the row. A second run finds nothing to do. */
  async purgeObject(objectId: string): Promise<PurgeOutcome> {
    const object = await this.objects.findForPurge(objectId);
    if (!object) return 'gone';
    if (object.status !== 'PURGING' || object.refCount > 0) return 'still-referenced';
    await this.storage.deleteObject(object.storageKey);
    await this.objects.finishPurge(objectId);
    this.logger.info({ objectId, key: object.storageKey }, 'object purged');
    return 'purged';
  }

  /**
   * Expires due files, re-enqueues lost purges, reclaims uploads a crashed gateway left, fails the
   * responses it left in progress, drops previews of content no live artifact has, prunes old tombstones.
   */
  async sweep(staleUploadSeconds: number, tombstoneRetentionSeconds: number): Promise<{ expired: number; requeued: number; reclaimed: number; interrupted: number; previews: number; pruned: number }> {
    let expired = 0;
    for (;;) {
      const released = await this.prisma.$transaction(async (tx) => {
        const objectIds = await this.files.expireDue(tx, new Date(), EXPIRE_BATCH);
        expired += objectIds.length;
        return { objectIds, purging: await this.objects.release(tx, objectIds) };
      });
      await this.purges.enqueue(released.purging);
      if (released.objectIds.length < EXPIRE_BATCH) break;
    }
    const reclaimed = await this.objects.reclaimStaleUploads(new Date(Date.now() - staleUploadSeconds * 1000));
    const lost = await this.objects.listPurgingSince(new Date(Date.now() - LOST_PURGE_AFTER_MS), 1000);
    await this.purges.enqueue([...reclaimed, ...lost]);
    const interrupted = await this.responses.failOverdue(new Date(Date.now() - OVERDUE_RESPONSE_GRACE_MS), {
      code: 'interrupted',
      message: 'The gateway running this response stopped before its agent finished.',
    });
    const previews = await this.pruneOrphanPreviews();
    // An archive row a request created while its session was being deleted: release it like the delete would have.
    const orphanedArchives = await this.prisma.$transaction(async (tx) => this.objects.release(tx, await this.archives.deleteOfDeletedSessions(tx)));
    await this.purges.enqueue(orphanedArchives);
    const pruned = await this.objects.pruneTombstones(new Date(Date.now() - tombstoneRetentionSeconds * 1000));
    if (expired || lost.length || reclaimed.length || interrupted || previews || pruned) this.logger.info({ expired, requeued: lost.length, reclaimed: reclaimed.length, interrupted, previews, pruned }, 'sweep');
    return { expired, requeued: lost.length, reclaimed: reclaimed.length, interrupted, previews, pruned };
  }

  /** Previews whose content no live artifact of their principal has any more: rows dropped, PDFs purged. */
  private async pruneOrphanPreviews(): Promise<number> {
    let dropped = 0;
    for (;;) {
      const purging = await this.prisma.$transaction(async (tx) => {
        const objectIds = await this.previews.deleteOrphans(tx, PREVIEW_PIPELINE_VERSION, EXPIRE_BATCH);
        dropped += objectIds.length;
        return { objectIds, purging: await this.objects.release(tx, objectIds) };
      });
      await this.purges.enqueue(purging.purging);
      if (purging.objectIds.length < EXPIRE_BATCH) return dropped;
    }
  }
}
