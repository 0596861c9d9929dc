import { Inject, Injectable } from '@nestjs/common';
import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { ObjectStore } from '@app/common';
import { StoredObjectRepository } from '@app/db';
import { ConversionError } from './conversion.error';

/** The bytes a preview converts: the source object a previews row was queued from. */
@Injectable()
export class PreviewSources {
  constructor(
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(ObjectStore) private readonly store: ObjectStore,
  ) {}

  /** Streams the source into a private file; a source deleted meanwhile is a permanent failure. */
  async fetch(objectId: string, path: string): Promise<void> {
    const source = await this.objects.find(objectId);
    if (!source || source.status !== 'READY')
      throw new ConversionError('corrupt_document', 'the source file was deleted before it could be converted');
    const object = await this.store.get(source.storageKey);
    await pipeline(object.body, createWriteStream(path, { mode: 0o600 }));
  }
}
