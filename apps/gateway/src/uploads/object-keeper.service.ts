import { Inject, Injectable } from '@nestjs/common';
import { LOGGER, PurgeProducer, StorageClient, type AppLogger } from '@app/common';
import { StoredObjectRepository, type StoredObjectRow } from '@app/db';

/** Disposes of objects whose upload failed or was rejected, so nothing is left behind. */
@Injectable()
export class ObjectKeeper {
  constructor(
    @Inject(StorageClient) private readonly storage: StorageClient,
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(PurgeProducer) private readonly purges: PurgeProducer,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  /**
   * Deletes the object now (the storage service first waits for the put in flight to finish its own
   * cleanup); if that fails, it is marked PURGING and left to the worker.
   */
  async discard(object: StoredObjectRow): Promise<void> {
    await this.objects.abandonUpload(object.id);
    try {
      await this.storage.deleteObject(object.storageKey);
      await this.objects.finishPurge(object.id);
    } catch (error) {
      this.logger.warn({ err: error, objectId: object.id }, 'could not delete a discarded upload now; queued for purge');
      await this.purges.enqueue([object.id]);
    }
  }
}
