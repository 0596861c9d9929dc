import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, LOGGER, PurgeProducer, StorageClient, type AppLogger, type WorkerConfig } from '@app/common';
import { ManifestHasher, type Manifest } from '@app/contracts';
import { ArchiveRepository, ContainerFileRepository, PrismaService, SessionRepository, StoredObjectRepository, type ArchiveBuild } from '@app/db';
import { EntryNameAllocator } from './entry-names';
import { zipEntryOptions } from './zip-entry-options';
import { ZipWriter, type ZipStream } from './zip-writer';

/** Artifact rows read per query while a build walks its session. */
const ARTIFACT_BATCH = 500;
/** Progress goes into the archive row at most this often (the gateway reads it for its 202). */
export const PROGRESS_INTERVAL_MS = 1_000;

export type BuildOutcome = 'built' | 'already-built' | 'gone' | 'session-gone' | 'superseded';

interface Progress {
  filesDone: number;
  bytesDone: number;
}

/**
 * Builds a session's archive: streams every artifact from the storage service through the ZIP writer
 * into a new stored object, then keeps it only if the session is still live and still holds exactly
 * the artifacts the archive row was made for. Idempotent: a re-run of a built archive does nothing,
 * a re-run of a failed or interrupted one starts over.
 */
@Injectable()
export class ArchiveBuildService {
  constructor(
    @Inject(PrismaService) private readonly prisma: PrismaService,
    @Inject(ArchiveRepository) private readonly archives: ArchiveRepository,
    @Inject(SessionRepository) private readonly sessions: SessionRepository,
    @Inject(ContainerFileRepository) private readonly containerFiles: ContainerFileRepository,
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(StorageClient) private readonly storage: StorageClient,
    @Inject(PurgeProducer) private readonly purges: PurgeProducer,
    @Inject(ZipWriter) private readonly zipWriter: ZipWriter,
    @Inject(APP_CONFIG) private readonly config: WorkerConfig,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  async build(archiveId: string): Promise<BuildOutcome> {
    const archive = await this.archives.findForBuild(archiveId);
    if (!archive) return 'gone';
    if (archive.status === 'ready') return 'already-built';
    if (!(await this.sessions.findForOwner(archive.principalId, archive.sessionId))) {
      await this.archives.removeUnbuilt(archive.principalId, archive.id);
      return 'session-gone';
    }
    if (!(await this.archives.claimForBuild(archive.principalId, archive.id))) return 'gone';

    const object = await this.objects.createUploading(archive.principalId);
    const progress: Progress = { filesDone: 0, bytesDone: 0 };
    const reporter = setInterval(() => {
      this.archives.reportProgress(archive.principalId, archive.id, progress.filesDone, progress.bytesDone).catch((error) => this.logger.warn({ err: error, archiveId }, 'could not record archive progress'));
    }, PROGRESS_INTERVAL_MS);
    let built: { manifest: Manifest; bytes: number; sha256: string };
    try {
      built = await this.writeZip(archive, object.storageKey, progress);
    } catch (error) {
      await this.discard(object.id);
      // An artifact deleted mid-build (its object purged under us) changes the manifest: not worth a retry.
      if ((await this.currentManifest(archive)).hash !== archive.manifestHash) {
        await this.archives.removeUnbuilt(archive.principalId, archive.id);
        return 'superseded';
      }
      throw error;
    } finally {
      clearInterval(reporter);
    }

    if (built.manifest.hash !== archive.manifestHash) {
      await this.discard(object.id);
      await this.archives.removeUnbuilt(archive.principalId, archive.id);
      return 'superseded';
    }
    const result = await this.prisma.$transaction(async (tx) => {
      const completed = await this.archives.completeBuild(tx, archive.principalId, archive.id, archive.sessionId, object.id, progress);
      if (completed.outcome !== 'ready') return { outcome: completed.outcome, purging: [] as string[] };
      await this.objects.markReady(tx, archive.principalId, object.id, built.bytes, built.sha256);
      return { outcome: completed.outcome, purging: await this.objects.release(tx, completed.released) };
    });
    if (result.outcome !== 'ready') {
      await this.discard(object.id);
      return result.outcome;
    }
    await this.purges.enqueue(result.purging);
    this.logger.info({ archiveId, sessionId: archive.sessionId, files: progress.filesDone, bytes: built.bytes, superseded: result.purging.length }, 'archive built');
    return 'built';
  }

  /** A build that gave up after its last try: the row says so, and the next request starts over. */
  async giveUp(archiveId: string, reason: string): Promise<void> {
    const archive = await this.archives.findForBuild(archiveId);
    if (archive) await this.archives.markFailed(archive.principalId, archive.id, reason);
  }

  private async writeZip(archive: ArchiveBuild, storageKey: string, progress: Progress): Promise<{ manifest: Manifest; bytes: number; sha256: string }> {
    const zip = this.zipWriter.open({ onBytes: (count) => (progress.bytesDone += count), onEntryDone: () => (progress.filesDone += 1) });
    const upload = this.storage.putObject(storageKey, zip.output, { maxBytes: this.config.ARCHIVE_MAX_BYTES, contentType: 'application/zip' });
    let manifest: Manifest;
    try {
      manifest = await this.addEntries(archive, zip);
      zip.end();
    } catch (error) {
      zip.fail(error);
      await upload.catch(() => undefined);
      throw error;
    }
    const receipt = await upload;
    return { manifest, bytes: receipt.bytes, sha256: receipt.sha256 };
  }

  /** Adds every artifact, oldest first, hashing the manifest on the way; sources open when the writer reaches them. */
  private async addEntries(archive: ArchiveBuild, zip: ZipStream): Promise<Manifest> {
    const hasher = new ManifestHasher();
    const names = new EntryNameAllocator();
    let afterSeq: bigint | undefined;
    for (;;) {
      const page = await this.containerFiles.listSessionArtifactObjects(archive.principalId, archive.sessionId, afterSeq, ARTIFACT_BATCH);
      for (const file of page.items) {
        hasher.add(file);
        const storageKey = file.storageKey;
        zip.add({
          name: names.allocate(file.filename),
          options: zipEntryOptions(file),
          open: async () => (await this.storage.getObject(storageKey)).body,
        });
      }
      if (!page.hasMore) return hasher.digest();
      afterSeq = page.items.at(-1)!.seq;
    }
  }

  private async currentManifest(archive: ArchiveBuild): Promise<Manifest> {
    const hasher = new ManifestHasher();
    let afterSeq: bigint | undefined;
    for (;;) {
      const page = await this.containerFiles.listSessionArtifacts(archive.principalId, archive.sessionId, afterSeq, ARTIFACT_BATCH);
      for (const file of page.items) hasher.add(file);
      if (!page.hasMore) return hasher.digest();
      afterSeq = page.items.at(-1)!.seq;
    }
  }

  /** What a build stored but may not keep: purged like any unreferenced object. */
  private async discard(objectId: string): Promise<void> {
    await this.objects.abandonUpload(objectId);
    await this.purges.enqueue([objectId]);
  }
}
