import { Inject, Injectable } from '@nestjs/common';
import { createWriteStream } from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ObjectStore } from '@app/common';
import { StoredObjectRepository } from '@app/db';
import { ConversionError } from './conversion.error';

const tooLarge = (bytes: bigint | number, maxBytes: number) =>
  new ConversionError('too_large', `the source is ${bytes} bytes, over the converter's ${maxBytes}-byte limit`);

/** The bytes a preview converts: the source object a previews row was queued from. */
@Injectable()
export class PreviewSources {
  constructor(
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(ObjectStore) private readonly store: ObjectStore,
  ) {}

  /**
   * Streams the source into a private file; a source deleted meanwhile is a permanent failure. A source whose
   * recorded size is over `maxBytes` is refused (too_large) before a byte of it is read, and the stream is cut
   * at `maxBytes` whatever the record says.
   */
  async fetch(objectId: string, path: string, maxBytes: number): Promise<void> {
    const source = await this.objects.find(objectId);
    const bytes = source?.status === 'READY' ? await this.objects.sizeOf(objectId) : null;
    if (!source || source.status !== 'READY' || bytes === null)
      throw new ConversionError('corrupt_document', 'the source file was deleted before it could be converted');
    if (bytes > BigInt(maxBytes)) throw tooLarge(bytes, maxBytes);
    const object = await this.store.get(source.storageKey);
    let seen = 0;
    const cap = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        seen += chunk.length;
        done(seen > maxBytes ? tooLarge(seen, maxBytes) : null, chunk);
      },
    });
    await pipeline(object.body, cap, createWriteStream(path, { mode: 0o600 }));
  }
}
