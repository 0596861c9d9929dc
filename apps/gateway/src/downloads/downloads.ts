import { Inject, Injectable } from '@nestjs/common';
import type { Readable } from 'node:stream';
import { ApiError, LOGGER, NO_RETRY_HEADERS, ObjectStore, type AppLogger, type ByteRange } from '@app/common';

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
  constructor(
    @Inject(ObjectStore) private readonly store: ObjectStore,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

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

  /**
   * A file or an artifact: bytes only a client can give again. Gone from the bucket while its row still
   * lists it, that is data lost, answered as such (500, no retry) and logged with the key for the operator
   * (`npm run doctor` reports it too); gone because the row was deleted meanwhile, it is the 404 it seems.
   */
  ofStored(object: Downloadable, stillListed: () => Promise<boolean>): Download {
    return whenMissing(this.of(object), async (missing) => {
      if (!(await stillListed())) return missing;
      this.logger.error(
        { storageKey: object.storageKey, objectId: object.objectId },
        'a listed file has no bytes in the bucket: they are lost until restored',
      );
      return new ApiError(
        'internal_error',
        "This file's bytes are missing from storage; the service's operator has to restore them.",
        null,
        { ...NO_RETRY_HEADERS },
      );
    });
  }
}

/** A download whose open, when the store has no such object, throws what `answer` makes of that 404 instead. */
function whenMissing(download: Download, answer: (missing: ApiError) => Promise<ApiError>): Download {
  return {
    ...download,
    open: async (range) => {
      try {
        return await download.open(range);
      } catch (error) {
        if (!(error instanceof ApiError) || error.code !== 'not_found') throw error;
        throw await answer(error);
      }
    },
  };
}

/**
 * A cached derivative (a preview's PDF, an archive's ZIP) that the bucket no longer holds (removed by
 * hand, a bucket restored from an older backup) is not a 404 for ever: `forget` drops its row so that
 * the next request builds it anew, and the client hears `retry`, an error a retry fixes.
 */
export function rebuiltWhenMissing(download: Download, forget: () => Promise<void>, retry: () => ApiError): Download {
  return whenMissing(download, async () => {
    await forget();
    return retry();
  });
}
