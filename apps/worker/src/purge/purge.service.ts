import { Inject, Injectable } from '@nestjs/common';
import { LOGGER, ObjectStore, type AppLogger } from '@app/common';
import { StoredObjectRepository } from '@app/db';

export type PurgeOutcome = 'purged' | 'still-referenced' | 'gone';
export type HashOutcome = 'hashed' | 'already-hashed' | 'gone';

/** Deletes the bytes of objects nothing references any more, then their rows. */
@Injectable()
export class PurgeService {
  constructor(
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(ObjectStore) private readonly store: ObjectStore,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  /** Idempotent: re-reads the row, deletes the bytes, then the row. A second run finds nothing to do. */
  async purgeObject(objectId: string): Promise<PurgeOutcome> {
    const object = await this.objects.find(objectId);
    if (!object) return 'gone';
    if (object.status !== 'PURGING' || object.refCount > 0) return 'still-referenced';
    await this.store.delete(object.storageKey);
    await this.objects.finishPurge(objectId);
    this.logger.info({ objectId, key: object.storageKey }, 'object purged');
    return 'purged';
  }

  /**
   * Measures an object that was completed unhashed and records its SHA-256 on it and on every file and
   * artifact pointing at it (the files become "processed"). Idempotent; an object gone meanwhile is skipped.
   */
  async hashObject(objectId: string): Promise<HashOutcome> {
    const object = await this.objects.find(objectId);
    if (!object || object.status !== 'READY') return 'gone';
    if (object.sha256) return 'already-hashed';
    const started = Date.now();
    let sha256: string;
    try {
      ({ sha256 } = await this.store.hash(object.storageKey, { md5: false }));
    } catch (error) {
      if ((error as { code?: string }).code === 'not_found') return 'gone';
      throw error;
    }
    const files = await this.objects.recordHash(objectId, sha256);
    this.logger.info(
      { objectId, bytes: Number(object.bytes), files, hashedMs: Date.now() - started },
      'object hashed; its files are processed',
    );
    return 'hashed';
  }
}
