import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, LOGGER, type AppLogger, type WorkerConfig } from '@app/common';
import type { Manifest } from '@app/contracts';
import { ArchiveRepository, type ArchiveBuild } from '@app/db';
import { ObjectStager, UnitOfWork, type StagedObject } from '@app/lifecycle';
import { ArchiveArtifacts } from './archive-artifacts';
import { ZipWriter } from './zip-writer';

/**
 * Progress goes into the archive row this often (the gateway reads it for its 202), and the build checks
 * as often whether the session's artifacts changed under it.
 */
export const PROGRESS_INTERVAL_MS = 1_000;

export type BuildOutcome = 'built' | 'already-built' | 'gone' | 'session-gone' | 'superseded';

interface Progress {
  filesDone: number;
  bytesDone: number;
}

/**
 * Builds a session's archive: streams every artifact through the ZIP writer into a staged object, then
 * keeps it only if the session is still live and still holds exactly the artifacts the archive row was
 * made for. Idempotent: a re-run of a built archive does nothing, a re-run of a failed or interrupted
 * one starts over.
 */
@Injectable()
export class ArchiveBuildService {
  constructor(
    @Inject(ArchiveRepository) private readonly archives: ArchiveRepository,
    @Inject(ArchiveArtifacts) private readonly artifacts: ArchiveArtifacts,
    @Inject(ZipWriter) private readonly zipWriter: ZipWriter,
    @Inject(ObjectStager) private readonly stager: ObjectStager,
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(APP_CONFIG) private readonly config: WorkerConfig,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  /**
   * `stop` aborts the build (the worker is stopping): the half-written ZIP is discarded, the row stays
   * `building` for the next worker to claim, and this throws.
   */
  async build(archiveId: string, stop: AbortSignal): Promise<BuildOutcome> {
    const archive = await this.archives.findForBuild(archiveId);
    if (!archive) return 'gone';
    if (archive.status === 'ready') return 'already-built';
    if (!archive.sessionLive) {
      await this.archives.removeUnbuilt(archive.principalId, archive.id);
      return 'session-gone';
    }
    if (!(await this.archives.claimForBuild(archive.principalId, archive.id))) return 'gone';

    const progress: Progress = { filesDone: 0, bytesDone: 0 };
    const version = await this.artifacts.version(archive);
    const stale = new AbortController();
    const watcher = setInterval(() => void this.watch(archive, progress, version, stale), PROGRESS_INTERVAL_MS);
    let built: { manifest: Manifest; zip: StagedObject };
    try {
      built = await this.writeZip(archive, progress, AbortSignal.any([stale.signal, stop]));
    } catch (error) {
      if (stop.aborted) throw error;
      // The session changed under the build (an artifact added or deleted, the row gone): not worth finishing.
      if (stale.signal.aborted) return this.superseded(archive);
      // An artifact deleted mid-build (its object purged under us) changes the manifest: not worth a retry.
      if ((await this.artifacts.currentManifest(archive)).hash !== archive.manifestHash)
        return this.superseded(archive);
      throw error;
    } finally {
      clearInterval(watcher);
    }
    if (built.manifest.hash !== archive.manifestHash) {
      await this.stager.discard([built.zip]);
      return this.superseded(archive);
    }

    const outcome = await this.uow.run(
      async (work): Promise<BuildOutcome> => {
        if (!(await work.sessions.lockLive(archive.principalId, archive.sessionId, 'exclusive'))) return 'session-gone';
        // The watcher looks once a second: a change after its last look is caught here, under the session's
        // lock, so a ZIP is never kept for a session that moved on while it was being finished.
        if ((await work.containerFiles.sessionVersion(archive.principalId, archive.sessionId)) !== version) {
          await work.archives.removeUnbuilt(archive.principalId, archive.id);
          return 'superseded';
        }
        const completed = await work.archives.completeBuild(archive.principalId, archive.id, built.zip.id, progress);
        if (completed.outcome !== 'ready') return completed.outcome;
        await work.adopt(built.zip);
        await work.release(completed.released);
        return 'built';
      },
      { staged: [built.zip] },
    );
    if (outcome === 'built')
      this.logger.info(
        { archiveId, sessionId: archive.sessionId, files: progress.filesDone, bytes: built.zip.bytes },
        'archive built',
      );
    return outcome;
  }

  /** A build that gave up after its last try: the row says so, and the next request starts over. */
  async giveUp(archiveId: string, reason: string): Promise<void> {
    const archive = await this.archives.findForBuild(archiveId);
    if (archive) await this.archives.markFailed(archive.principalId, archive.id, reason);
  }

  /**
   * Every second of a build: records its progress for the gateway's 202, and stops it early when its row
   * went away or the session's artifacts changed — the ZIP being written could never be kept.
   */
  private async watch(
    archive: ArchiveBuild,
    progress: Progress,
    version: string,
    stale: AbortController,
  ): Promise<void> {
    try {
      const building = await this.archives.reportProgress(
        archive.principalId,
        archive.id,
        progress.filesDone,
        progress.bytesDone,
      );
      if (!building || (await this.artifacts.version(archive)) !== version) {
        if (!stale.signal.aborted)
          this.logger.info(
            { archiveId: archive.id, filesDone: progress.filesDone },
            'session changed mid-build; build stopped',
          );
        stale.abort();
      }
    } catch (error) {
      this.logger.warn({ err: error, archiveId: archive.id }, 'could not record archive progress');
    }
  }

  private async superseded(archive: ArchiveBuild): Promise<BuildOutcome> {
    await this.archives.removeUnbuilt(archive.principalId, archive.id);
    return 'superseded';
  }

  /**
   * The ZIP streams into a staged object while the entries are added; a failure on either side, or
   * `stop`, discards it.
   */
  private async writeZip(
    archive: ArchiveBuild,
    progress: Progress,
    stop: AbortSignal,
  ): Promise<{ manifest: Manifest; zip: StagedObject }> {
    const zip = this.zipWriter.open({
      onBytes: (count) => (progress.bytesDone += count),
      onEntryDone: () => (progress.filesDone += 1),
    });
    const staging = this.stager.stage(archive.principalId, zip.output, {
      maxBytes: this.config.ARCHIVE_MAX_BYTES,
      contentType: 'application/zip',
      signal: stop,
    });
    const onStop = () => zip.fail(new Error('the session changed during the build'));
    stop.addEventListener('abort', onStop, { once: true });
    let manifest: Manifest;
    try {
      manifest = await this.artifacts.addAll(archive, zip);
      zip.end();
    } catch (error) {
      zip.fail(error);
      await staging.catch(() => undefined);
      throw error;
    }
    try {
      return { manifest, zip: await staging };
    } finally {
      stop.removeEventListener('abort', onStop);
    }
  }
}
