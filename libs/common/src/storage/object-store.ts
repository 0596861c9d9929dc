import type { Readable } from 'node:stream';
import type { ComposedObjectReceipt, StoredObjectReceipt } from '@app/contracts';

export interface ByteRange {
  start: number;
  /** Inclusive, as in HTTP ranges. */
  end: number;
}

export interface ObjectRead {
  status: 200 | 206;
  body: Readable;
  contentLength: number;
  contentRange?: string;
}

export interface PutOptions {
  /** One byte more and the put fails with file_too_large, leaving nothing in the bucket. */
  maxBytes: number;
  contentType?: string;
  /** Aborting it cancels the put; nothing is left behind. */
  signal?: AbortSignal;
}

/**
 * The port to object bytes. Only the storage service holds S3 credentials: the gateway and the worker
 * reach bytes through this port, whose adapter is the storage service's client. Keys are made by our
 * own code, never from client input.
 */
export abstract class ObjectStore {
  /** Streams `body` into `key`; resolves with the byte count and SHA-256 the store measured. */
  abstract put(key: string, body: Readable, options: PutOptions): Promise<StoredObjectReceipt>;
  /** Opens the object, or one byte range of it, as a stream the caller must consume or destroy. */
  abstract get(key: string, range?: ByteRange): Promise<ObjectRead>;
  /** A missing object counts as deleted. */
  abstract delete(key: string): Promise<void>;
  /**
   * Makes `key` the concatenation of the objects `sources`, in order, on the storage side (no byte
   * passes through the caller); resolves with its size, SHA-256 and MD5. On failure nothing is at `key`.
   */
  abstract compose(key: string, sources: string[], contentType?: string): Promise<ComposedObjectReceipt>;
}
