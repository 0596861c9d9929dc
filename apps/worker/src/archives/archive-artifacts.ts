import { Inject, Injectable } from '@nestjs/common';
import { ObjectStore } from '@app/common';
import { ManifestHasher, type Manifest } from '@app/contracts';
import { ContainerFileRepository, type ArchiveBuild } from '@app/db';
import { EntryNameAllocator } from './entry-names';
import { zipEntryOptions } from './zip-entry-options';
import type { ZipStream } from './zip-writer';

/** Artifact rows read per query while a build walks its session. */
const ARTIFACT_BATCH = 500;

/** A session's artifacts as an archive sees them: its entries, and the manifest they hash to. */
@Injectable()
export class ArchiveArtifacts {
  constructor(
    @Inject(ContainerFileRepository) private readonly containerFiles: ContainerFileRepository,
    @Inject(ObjectStore) private readonly store: ObjectStore,
  ) {}

  /**
   * Adds every artifact, oldest first, with a safe unique entry name, hashing the manifest on the way;
   * each source opens only when the writer reaches it, so one object stream is open at a time.
   */
  async addAll(archive: ArchiveBuild, zip: ZipStream): Promise<Manifest> {
    const hasher = new ManifestHasher();
    const names = new EntryNameAllocator();
    let afterSeq: bigint | undefined;
    for (;;) {
      const page = await this.containerFiles.listSessionArtifactObjects(
        archive.principalId,
        archive.sessionId,
        afterSeq,
        ARTIFACT_BATCH,
      );
      for (const file of page.items) {
        hasher.add(file);
        zip.add({
          name: names.allocate(file.filename),
          options: zipEntryOptions(file),
          open: async () => (await this.store.get(file.storageKey)).body,
        });
      }
      if (!page.hasMore) return hasher.digest();
      afterSeq = page.items.at(-1)!.seq;
    }
  }

  /** A token that changes when an artifact is added to or deleted from the session. */
  version(archive: ArchiveBuild): Promise<string> {
    return this.containerFiles.sessionVersion(archive.principalId, archive.sessionId);
  }

  /** The manifest of the session as it is now. */
  async currentManifest(archive: ArchiveBuild): Promise<Manifest> {
    const hasher = new ManifestHasher();
    let afterSeq: bigint | undefined;
    for (;;) {
      const page = await this.containerFiles.listSessionArtifacts(
        archive.principalId,
        archive.sessionId,
        afterSeq,
        ARTIFACT_BATCH,
      );
      for (const file of page.items) hasher.add(file);
      if (!page.hasMore) return hasher.digest();
      afterSeq = page.items.at(-1)!.seq;
    }
  }
}
