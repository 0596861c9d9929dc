import { Inject, Injectable } from '@nestjs/common';
import type { Readable } from 'node:stream';
import { ApiError, ObjectStore, type ByteRange } from '@app/common';

/** What a download serves: the facts for its headers, and its bytes on demand. */
export interface Download {
  filename: string;
  contentType: string;
  bytes: number;
  /** The strong ETag's value: the content's SHA-256, or the (immutable) object's id until it is hashed. */
  etag: string;
  disposition: 'attachment' | 'inline';
  /** Opens the bytes, or one range of them; the caller consumes or destroys the stream. */
  open(range?: ByteRange): Promise<Readable>;
}

/** A stored object as something to download. */
export interface Downloadable {
  storageKey: string;
  objectId?: string;
  /** Null while the file is "uploaded" (not hashed yet). */
  sha256: string | null;
  bytes: bigint | number;
  contentType: string;
  filename: string;
}

/** Turns stored objects into downloads whose bytes come from the object store. */
@Injectable()
export class Downloads {
  constructor(@Inject(ObjectStore) private readonly store: ObjectStore) {}

  of(object: Downloadable, disposition: Download['disposition'] = 'attachment'): Download {
    return {
      filename: object.filename,
      contentType: object.contentType,
      bytes: Number(object.bytes),
      etag: object.sha256 ?? `object-${object.objectId ?? object.storageKey}`,
      disposition,
      open: async (range) => (await this.store.get(object.storageKey, range)).body,
    };
  }
}

/**
 * A cached derivative (a preview's PDF, an archive's ZIP) that the bucket no longer holds (removed by
 * hand, a bucket restored from an older backup) is not a 404 for ever: `forget` drops its row so that
 * the next request builds it anew, and the client hears `retry`, an error a retry fixes.
 */
export function rebuiltWhenMissing(download: Download, forget: () => Promise<void>, retry: () => ApiError): Download {
  return {
    ...download,
    open: async (range) => {
      try {
        return await download.open(range);
      } catch (error) {
        if (!(error instanceof ApiError) || error.code !== 'not_found') throw error;
        await forget();
        throw retry();
      }
    },
  };
}
