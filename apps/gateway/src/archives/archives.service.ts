import { Inject, Injectable } from '@nestjs/common';
import { ApiError, APP_CONFIG, LOGGER, type AppLogger, type GatewayConfig } from '@app/common';
import { JobBus } from '@app/queue';
import { isId, JOB, JOBS, ManifestHasher, type Manifest } from '@app/contracts';
import { ArchiveRepository, ContainerFileRepository, SessionRepository, type ArchiveRow } from '@app/db';
import { UnitOfWork } from '@app/lifecycle';
import { type Download, Downloads, rebuiltWhenMissing } from '../downloads/downloads';
import { JobCompletions } from '../jobs/job-completions';

/** Artifact rows read per query while hashing a session's manifest. */
const MANIFEST_BATCH = 1_000;
/** What a 202 asks the client to wait before it asks again. */
export const ARCHIVE_RETRY_AFTER_SECONDS = 2;
/**
 * A build that failed all its tries is answered 503 for this long before a request may start it again:
 * otherwise a client polling every Retry-After would restart a hopeless build forever and never hear why.
 */
export const FAILED_BUILD_COOLDOWN_MS = 30_000;

/** A ready archive to download, or the progress of its build. */
export type ArchiveAnswer = { kind: 'ready'; download: Download } | { kind: 'building'; archive: ArchiveRow };

/**
 * GET /v1/sessions/{sid}/files/archive. The archive is named by the session's manifest
 * (the exact set of artifacts, hashed): a ready one is served at once like any download; otherwise the
 * build is queued (once per manifest), awaited up to ARCHIVE_WAIT_MS, and else answered 202 with its
 * progress. A new or deleted artifact changes the manifest, so the next request builds anew.
 */
@Injectable()
export class ArchivesService {
  constructor(
    @Inject(SessionRepository) private readonly sessions: SessionRepository,
    @Inject(ContainerFileRepository) private readonly containerFiles: ContainerFileRepository,
    @Inject(ArchiveRepository) private readonly archives: ArchiveRepository,
    @Inject(JobBus) private readonly jobs: JobBus,
    @Inject(JobCompletions) private readonly completions: JobCompletions,
    @Inject(Downloads) private readonly downloads: Downloads,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  /** `isGone` tells a waiting request that its client hung up: it stops waiting. */
  async archive(principalId: string, sessionId: string, isGone: () => boolean): Promise<ArchiveAnswer> {
    if (!isId('session', sessionId) || !(await this.sessions.findForOwner(principalId, sessionId)))
      throw ApiError.notFound('session');
    const manifest = await this.manifestOf(principalId, sessionId);
    let archive = await this.archives.findForManifest(principalId, sessionId, manifest.hash);
    if (archive?.status === 'failed') this.refuseWhileCoolingDown(archive);
    if (archive?.status !== 'ready') {
      if (!archive || archive.status === 'failed') await this.refuseOverBuildLimit(principalId);
      archive = await this.archives.requestBuild(principalId, sessionId, manifest);
      if (!archive) throw ApiError.notFound('session');
      if (archive.status !== 'ready') {
        await this.enqueue(archive.id, await this.archives.countBuilding(principalId));
        archive = await this.waitForBuild(principalId, sessionId, archive, isGone);
      }
    }
    if (archive.status === 'ready' && archive.object) {
      const { object } = archive;
      const download = this.downloads.of({
        storageKey: object.storageKey,
        sha256: object.sha256 ?? archive.id,
        bytes: object.bytes,
        contentType: 'application/zip',
        filename: `${sessionId}.zip`,
      });
      const ready = archive;
      return {
        kind: 'ready',
        download: rebuiltWhenMissing(
          download,
          () => this.dropLost(principalId, ready),
          () =>
            new ApiError(
              'service_unavailable',
              'The cached archive was missing from storage; the next request builds it again.',
              null,
              { 'retry-after': String(ARCHIVE_RETRY_AFTER_SECONDS) },
            ),
        ),
      };
    }
    if (archive.status === 'failed') this.refuseWhileCoolingDown(archive);
    return { kind: 'building', archive };
  }

  private async dropLost(principalId: string, archive: ArchiveRow): Promise<void> {
    this.logger.warn(
      { archiveId: archive.id, storageKey: archive.object?.storageKey },
      'a ready archive has no ZIP in the bucket: dropping it so that it builds again',
    );
    await this.uow.run(async (work) => work.release(await work.archives.dropLost(principalId, archive.id)));
  }

  /** Nothing else would ever build it: a queue that does not take the job is a 503 now, not a 202 forever. */
  private async enqueue(archiveId: string, place: number): Promise<void> {
    try {
      await this.jobs.add(JOB.buildArchive, [{ archiveId }], { priority: place });
    } catch {
      throw new ApiError('service_unavailable', 'Archives cannot be built right now; try again.');
    }
  }

  /** A principal with its quota of builds queued or running starts no more until some finish. */
  private async refuseOverBuildLimit(principalId: string): Promise<void> {
    const building = await this.archives.countBuilding(principalId);
    const max = this.config.UHP_MAX_ARCHIVE_BUILDS;
    if (building < max) return;
    throw new ApiError('rate_limited', `${building} archives of yours are being built; at most ${max} at once.`, null, {
      'retry-after': String(ARCHIVE_RETRY_AFTER_SECONDS),
    });
  }

  private refuseWhileCoolingDown(archive: ArchiveRow): void {
    const waitMs = archive.updatedAt.getTime() + FAILED_BUILD_COOLDOWN_MS - Date.now();
    if (waitMs <= 0) return;
    throw new ApiError(
      'service_unavailable',
      `The archive could not be built${archive.error ? ` (${archive.error})` : ''}; ` +
        'a request after Retry-After tries again.',
      null,
      {
        'retry-after': String(Math.ceil(waitMs / 1000)),
      },
    );
  }

  /** The session's artifacts in listing order, hashed batch by batch: memory does not grow with the session. */
  private async manifestOf(principalId: string, sessionId: string): Promise<Manifest> {
    const hasher = new ManifestHasher();
    let afterSeq: bigint | undefined;
    for (;;) {
      const page = await this.containerFiles.listSessionArtifacts(principalId, sessionId, afterSeq, MANIFEST_BATCH);
      for (const file of page.items) hasher.add(file);
      if (!page.hasMore) return hasher.digest();
      afterSeq = page.items.at(-1)!.seq;
    }
  }

  /**
   * Waits until the build is ready or failed (woken when its job finishes; the row decides), the wait is
   * over or the client hangs up. A row that vanishes was superseded (the artifacts changed under it): the
   * last state seen is answered, and the client's next request builds the new manifest. A session deleted
   * meanwhile is a 404.
   */
  private async waitForBuild(
    principalId: string,
    sessionId: string,
    archive: ArchiveRow,
    isGone: () => boolean,
  ): Promise<ArchiveRow> {
    let last = archive;
    const finished = await this.completions.waitFor(JOBS[JOB.buildArchive].jobId({ archiveId: archive.id }), {
      timeoutMs: this.config.ARCHIVE_WAIT_MS,
      isGone,
      check: async () => {
        const current = await this.archives.findForManifest(principalId, sessionId, archive.manifestHash);
        if (!current) {
          if (!(await this.sessions.findForOwner(principalId, sessionId))) throw ApiError.notFound('session');
          return last;
        }
        last = current;
        return current.status === 'ready' || current.status === 'failed' ? current : undefined;
      },
    });
    return finished ?? last;
  }
}
