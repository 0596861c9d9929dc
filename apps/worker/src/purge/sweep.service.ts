import { Inject, Injectable } from '@nestjs/common';
import { LOGGER, ObjectStore, type AppLogger } from '@app/common';
import { JobBus } from '@app/queue';
import { JOB, PREVIEW_PIPELINE_VERSION } from '@app/contracts';
import {
  ArchiveRepository,
  MaintenanceRepository,
  PreviewRepository,
  ResponseRepository,
  StoredObjectRepository,
  UploadRepository,
} from '@app/db';
import { UnitOfWork, type Work } from '@app/lifecycle';

const BATCH = 500;
/** A response still in progress this long past its deadline lost its gateway (crash, restart). */
const OVERDUE_RESPONSE_GRACE_MS = 60_000;

export interface SweepSettings {
  staleUploadSeconds: number;
  deletedRowRetentionSeconds: number;
  /** A PURGING object this old with no job in sight gets one (its enqueue was lost). */
  lostPurgeSeconds: number;
  /** A file still "uploaded" this long after it was made gets its hash job again (its enqueue was lost). */
  lostHashSeconds?: number;
  /** A preview or archive waiting this long gets its job again (a no-op when Redis still has it). */
  lostJobSeconds?: number;
}

export interface SweepResult {
  expired: number;
  expiredUploads: number;
  abortedMultiparts: number;
  /** Reservations of parts whose gateway stopped renewing them: held (S3 took the block) or dropped. */
  heldReservations: number;
  droppedReservations: number;
  requeuedHashes: number;
  requeued: number;
  /** Previews and archives waiting past lostJobSeconds: their jobs queued again where Redis had lost them. */
  waitingBuilds: number;
  reclaimed: number;
  interrupted: number;
  previews: number;
  archives: number;
  pruned: number;
}

/**
 * The periodic safety net: expires due files and resumable uploads, settles the part reservations a
 * dead gateway left, re-queues purges that were lost, reclaims uploads a
 * crashed process left, fails responses a dead gateway left in progress, drops previews of content no
 * live artifact has and archives a racing request left on a deleted session, and prunes old deleted
 * rows. Every release goes through a unit of work, so each reference goes exactly once.
 */
@Injectable()
export class SweepService {
  constructor(
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(ResponseRepository) private readonly responses: ResponseRepository,
    @Inject(MaintenanceRepository) private readonly maintenance: MaintenanceRepository,
    @Inject(UploadRepository) private readonly uploads: UploadRepository,
    @Inject(PreviewRepository) private readonly previewRows: PreviewRepository,
    @Inject(ArchiveRepository) private readonly archiveRows: ArchiveRepository,
    @Inject(ObjectStore) private readonly store: ObjectStore,
    @Inject(JobBus) private readonly jobs: JobBus,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  async sweep(settings: SweepSettings): Promise<SweepResult> {
    const expired = await this.inBatches(async (work) => {
      const objectIds = await work.files.expireDue(new Date(), BATCH);
      await work.release(objectIds);
      return objectIds.length;
    });
    // Resumable uploads past their expiry: expired, and every part they received released (purged).
    const expiredUploads = await this.inBatches(async (work) => {
      const objectIds = await work.uploads.expireDue(new Date(), BATCH);
      await work.release(objectIds);
      return objectIds.length;
    });
    const abortedMultiparts = await this.abortEndedMultiparts();
    const reservations = await this.uploads.settleLapsedReservations(new Date());
    const unhashed = await this.objects.listUnhashedSince(
      new Date(Date.now() - (settings.lostHashSeconds ?? 600) * 1000),
      1000,
    );
    await this.jobs.hash(unhashed);
    const reclaimed = await this.objects.reclaimStaleUploads(new Date(Date.now() - settings.staleUploadSeconds * 1000));
    const lost = await this.objects.listPurgingSince(new Date(Date.now() - settings.lostPurgeSeconds * 1000), 1000);
    await this.jobs.purge([...reclaimed, ...lost]);
    const waitingBuilds = await this.requeueWaitingBuilds(settings.lostJobSeconds ?? 60);
    const interrupted = await this.responses.failOverdue(new Date(Date.now() - OVERDUE_RESPONSE_GRACE_MS), {
      code: 'interrupted',
      message: 'The gateway running this response stopped before its agent finished.',
    });
    const previews = await this.inBatches(async (work) => {
      const objectIds = await work.previews.deleteOrphans(PREVIEW_PIPELINE_VERSION, BATCH);
      await work.release(objectIds);
      return objectIds.length;
    });
    const archives = await this.uow.run(async (work) => {
      const objectIds = await work.archives.deleteOfDeletedSessions();
      await work.release(objectIds);
      return objectIds.length;
    });
    const pruned = await this.maintenance.pruneDeletedRows(
      new Date(Date.now() - settings.deletedRowRetentionSeconds * 1000),
    );
    const result = {
      expired,
      expiredUploads,
      abortedMultiparts,
      heldReservations: reservations.held,
      droppedReservations: reservations.dropped,
      requeuedHashes: unhashed.length,
      requeued: lost.length,
      waitingBuilds,
      reclaimed: reclaimed.length,
      interrupted,
      previews,
      archives,
      pruned,
    };
    if (Object.values(result).some((count) => count > 0)) this.logger.info(result, 'sweep');
    return result;
  }

  /**
   * Previews and archives still waiting get their job again: adding a job whose id exists changes nothing, and one
   * Redis lost (acknowledged by a primary that failed over before its replica had it) starts now. A failed enqueue
   * is only logged: the next sweep tries again.
   */
  private async requeueWaitingBuilds(lostJobSeconds: number): Promise<number> {
    const before = new Date(Date.now() - lostJobSeconds * 1000);
    const previews = await this.previewRows.listPendingSince(before, 1000);
    const archives = await this.archiveRows.listUnbuiltSince(before, 1000);
    try {
      await this.jobs.add(JOB.convertPreview, previews);
      await this.jobs.add(
        JOB.buildArchive,
        archives.map((archiveId) => ({ archiveId })),
      );
    } catch {
      this.logger.warn({ previews: previews.length, archives: archives.length }, 'waiting builds not re-queued now');
      return 0;
    }
    return previews.length + archives.length;
  }

  /**
   * The S3 multipart uploads of cancelled and expired resumable uploads, aborted: their blocks go. One
   * the storage service cannot abort now is left to its own sweep, which finds its owner no longer pending.
   */
  private async abortEndedMultiparts(): Promise<number> {
    let aborted = 0;
    for (const multipart of await this.uploads.closeEndedMultiparts(BATCH)) {
      try {
        await this.store.abortMultipart(multipart.storageKey, multipart.s3UploadId);
        aborted++;
      } catch (error) {
        this.logger.warn({ err: error, key: multipart.storageKey }, 'could not abort a multipart upload; storage will');
      }
    }
    return aborted;
  }

  /** Runs `step` in its own unit of work until it handles less than a full batch. */
  private async inBatches(step: (work: Work) => Promise<number>): Promise<number> {
    let total = 0;
    for (;;) {
      const count = await this.uow.run(step);
      total += count;
      if (count < BATCH) return total;
    }
  }
}
