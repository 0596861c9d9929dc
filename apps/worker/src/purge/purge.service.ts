import { Inject, Injectable } from '@nestjs/common';
import { LOGGER, ObjectStore, type AppLogger } from '@app/common';
import { StoredObjectRepository } from '@app/db';

export type PurgeOutcome = 'purged' | 'still-referenced' | 'gone';

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
}
