import { Inject, Injectable } from '@nestjs/common';
import { ObjectStore } from '@app/common';
import { StoredObjectRepository, type UploadPartRow } from '@app/db';
import {
  type ByteSource,
  type CompletedObject,
  type CompletionRequest,
  md5Mismatch,
  sourcesOf,
} from './completed-object';

/**
 * When the named parts are exactly one stored object from its first byte to its last (one staged part,
 * or every block of a staged multipart upload), the file points at that object as it is: no byte is
 * copied. Its SHA-256 is measured now if it is not known yet, with the MD5 when there is one to check.
 * Null when the parts are not one whole object.
 */
@Injectable()
export class WholeObjectCompletion {
  constructor(
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(ObjectStore) private readonly store: ObjectStore,
  ) {}

  async complete({ upload, parts, md5 }: CompletionRequest): Promise<CompletedObject | null> {
    const sources = sourcesOf(parts);
    const whole = sources.length === 1 && (await this.wholeObject(parts[0], sources[0]));
    if (!whole) return null;
    const hashed =
      whole.sha256 && md5 === null
        ? { sha256: whole.sha256, md5: undefined }
        : await this.store.hash(whole.storageKey, { md5: md5 !== null });
    const object = { ...whole, bytes: Number(upload.bytes), sha256: hashed.sha256, md5: hashed.md5 ?? undefined };
    if (md5 !== null && object.md5 !== md5) throw md5Mismatch(object.md5);
    return { object, how: 'whole', kept: 'retained' };
  }

  /** The object `source` spans entirely, if it does. */
  private async wholeObject(part: UploadPartRow, source: ByteSource) {
    if (!part.objectId || source.start !== 0) return null;
    const object = await this.objects.find(part.objectId);
    return object && Number(object.bytes) === source.end + 1
      ? { id: object.id, principalId: object.principalId, storageKey: object.storageKey, sha256: object.sha256 }
      : null;
  }
}
