import type { Readable } from 'node:stream';
import type {
  CompletedBlocksReceipt,
  ComposedObjectReceipt,
  ComposeSource,
  HashedObjectReceipt,
  StoredObjectReceipt,
} from '@app/contracts';

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
  abstract compose(key: string, sources: ComposeSource[], contentType?: string): Promise<ComposedObjectReceipt>;
  /** Reads the object once on the storage side: its size, SHA-256 and (unless `md5: false`) MD5. */
  abstract hash(key: string, options?: { md5?: boolean }): Promise<HashedObjectReceipt>;
  /** Opens a multipart upload at `key` that stays open across requests; resolves with its upload id. */
  abstract openMultipart(key: string, contentType: string): Promise<string>;
  /**
   * Streams one part (5 MiB to 64 MiB) into block `block` of the open multipart upload; 400 under
   * 5 MiB, 404 when the multipart upload is no longer open.
   */
  abstract putBlock(
    key: string,
    uploadId: string,
    block: number,
    body: Readable,
    options: PutOptions,
  ): Promise<StoredObjectReceipt>;
  /**
   * Completes the open multipart upload from exactly `blocks` (ascending) plus `lastSource` as the last
   * part — upload_conflict when it holds other parts too — or from every part it holds ('all').
   */
  abstract completeBlocks(
    key: string,
    uploadId: string,
    blocks: number[] | 'all',
    lastSource?: string,
  ): Promise<CompletedBlocksReceipt>;
  /** Aborts the multipart upload; one that is already gone counts as aborted. */
  abstract abortMultipart(key: string, uploadId: string): Promise<void>;
}
