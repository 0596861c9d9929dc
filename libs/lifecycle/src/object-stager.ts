import { Inject, Injectable } from '@nestjs/common';
import type { Readable } from 'node:stream';
import { ApiError, LOGGER, ObjectStore, type AppLogger, type PutOptions } from '@app/common';
import { JobBus } from '@app/queue';
import type { CompletedBlocksReceipt, ComposeSource } from '@app/contracts';
import { StoredObjectRepository } from '@app/db';

/** Bytes in the bucket that no row points at yet: kept only when a unit of work adopts them. */
export interface StagedObject {
  id: string;
  principalId: string;
  storageKey: string;
  bytes: number;
  /** Null for an object completed from an upload's blocks: the worker measures it later. */
  sha256: string | null;
}

/** A staged object whose SHA-256 the store measured on the way in. */
export type HashedStagedObject = StagedObject & { sha256: string };

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
  async stage(principalId: string, body: Readable, options: PutOptions): Promise<HashedStagedObject> {
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
    sourceKeys: ComposeSource[],
    contentType: string,
  ): Promise<StagedObject & { sha256: string; md5: string }> {
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

  /**
   * The open multipart upload at `storageKey` completed on the storage side (from exactly `blocks` and
   * `lastSource` as its last part, or from every part it holds: see ObjectStore.completeBlocks), as a
   * new object of the principal at that key. Its SHA-256 is not known (null): the caller has it
   * measured. On failure nothing is kept at the key.
   */
  async stageBlocks(
    principalId: string,
    storageKey: string,
    uploadId: string,
    blocks: number[] | 'all',
    lastSource?: string,
  ): Promise<StagedObject & { placements: CompletedBlocksReceipt['blocks'] }> {
    let object: { id: string; storageKey: string };
    try {
      object = await this.objects.createUploading(principalId, storageKey);
    } catch (error) {
      // A failed earlier completion of this key whose purge has not finished yet.
      this.logger.warn({ err: error, storageKey }, 'the object of this upload is still being discarded');
      throw new ApiError('service_unavailable', 'A previous completion of this upload is being cleaned up; retry.');
    }
    try {
      const receipt = await this.store.completeBlocks(storageKey, uploadId, blocks, lastSource);
      return {
        id: object.id,
        principalId,
        storageKey,
        bytes: receipt.bytes,
        sha256: null,
        placements: receipt.blocks,
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
