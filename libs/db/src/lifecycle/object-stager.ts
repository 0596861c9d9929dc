import { Inject, Injectable } from '@nestjs/common';
import type { Readable } from 'node:stream';
import { JobBus, LOGGER, ObjectStore, type AppLogger, type PutOptions } from '@app/common';
import { StoredObjectRepository } from '../repositories/stored-object.repository';

/** Bytes in the bucket that no row points at yet: kept only when a unit of work adopts them. */
export interface StagedObject {
  id: string;
  principalId: string;
  storageKey: string;
  bytes: number;
  sha256: string;
}

/** An object to be discarded: staged, or whose upload failed part way. */
export interface DiscardableObject {
  id: string;
  storageKey: string;
}

/**
 * The first and the last step of an object's life. `stage` records an UPLOADING row (so a crash is
 * found and reclaimed) and streams the bytes in, capped and hashed by the store. `discard` is the one
 * discard policy, for an upload that failed and for staged bytes nobody adopted: the row turns
 * PURGING, the bytes are deleted now and the row removed; if that cannot happen now, the purge queue
 * (and behind it the sweep) finishes the job.
 */
@Injectable()
export class ObjectStager {
  constructor(
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(ObjectStore) private readonly store: ObjectStore,
    @Inject(JobBus) private readonly jobs: JobBus,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  /** Streams `body` into a new object of the principal. On any failure nothing is left and the error is rethrown. */
  async stage(principalId: string, body: Readable, options: PutOptions): Promise<StagedObject> {
    const object = await this.objects.createUploading(principalId);
    try {
      const receipt = await this.store.put(object.storageKey, body, options);
      return {
        id: object.id,
        principalId,
        storageKey: object.storageKey,
        bytes: receipt.bytes,
        sha256: receipt.sha256,
      };
    } catch (error) {
      body.destroy();
      await this.discard([object]);
      throw error;
    }
  }

  /**
   * A new object of the principal composed on the storage side from the objects `sourceKeys` (their
   * bytes never come here); the MD5 is returned for the caller's check. On failure nothing is left.
   */
  async stageComposed(
    principalId: string,
    sourceKeys: string[],
    contentType: string,
  ): Promise<StagedObject & { md5: string }> {
    const object = await this.objects.createUploading(principalId);
    try {
      const receipt = await this.store.compose(object.storageKey, sourceKeys, contentType);
      return {
        id: object.id,
        principalId,
        storageKey: object.storageKey,
        bytes: receipt.bytes,
        sha256: receipt.sha256,
        md5: receipt.md5,
      };
    } catch (error) {
      await this.discard([object]);
      throw error;
    }
  }

  async discard(objects: DiscardableObject[]): Promise<void> {
    await Promise.all(objects.map((object) => this.discardOne(object)));
  }

  private async discardOne(object: DiscardableObject): Promise<void> {
    try {
      await this.objects.abandon(object.id);
      await this.store.delete(object.storageKey);
      await this.objects.finishPurge(object.id);
    } catch (error) {
      this.logger.warn({ err: error, objectId: object.id }, 'could not discard an object now; queued for purge');
      await this.jobs.purge([object.id]);
    }
  }
}
