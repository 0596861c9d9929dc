import { Inject, Injectable } from '@nestjs/common';
import type { Readable } from 'node:stream';
import { APP_CONFIG, StorageClient, type GatewayConfig } from '@app/common';
import type { StoredObjectReceipt } from '@app/contracts';
import { StoredObjectRepository, type StoredObjectRow } from '@app/db';
import { ObjectKeeper } from './object-keeper.service';

export interface WrittenObject {
  object: StoredObjectRow;
  receipt: StoredObjectReceipt;
}

/**
 * Streams bytes the gateway itself holds or produces (inline inputs, agent artifacts) into a new
 * stored object. The caller commits it with its rows in one transaction, or hands it to
 * ObjectKeeper.discard when that fails; a failed write leaves nothing behind on its own.
 */
@Injectable()
export class ObjectWriter {
  constructor(
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(StorageClient) private readonly storage: StorageClient,
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(ObjectKeeper) private readonly keeper: ObjectKeeper,
  ) {}

  async write(principalId: string, body: Readable, contentType: string): Promise<WrittenObject> {
    const object = await this.objects.createUploading(principalId);
    try {
      const receipt = await this.storage.putObject(object.storageKey, body, { maxBytes: this.config.UHP_MAX_FILE_BYTES, contentType });
      return { object, receipt };
    } catch (error) {
      body.destroy();
      await this.keeper.discard(object);
      throw error;
    }
  }
}
