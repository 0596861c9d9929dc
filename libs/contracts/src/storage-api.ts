/** The internal API of the storage service (never exposed publicly; authenticated with STORAGE_TOKEN). */
export const STORAGE_HEADER = {
  /** Byte cap for a PUT: one byte more and the upload is aborted and answered 413 file_too_large. */
  maxBytes: 'x-uhp-max-bytes',
  contentType: 'x-uhp-content-type',
} as const;

/** Answer of a completed PUT /internal/objects/{key}. */
export interface StoredObjectReceipt {
  key: string;
  bytes: number;
  sha256: string;
}

/** Storage keys are made by our own services, never from client input: `objects/<uuid>` and the like. */
export const STORAGE_KEY_PATTERN = /^[a-z]+\/[0-9a-z][0-9a-z._-]{0,200}$/;

export function objectsPath(key: string): string {
  return `/internal/objects/${encodeURIComponent(key)}`;
}

/**
 * Answer of GET /internal/read-urls/{key}: a URL that reads the object straight from S3 (a GET, to which a
 * Range header may be added) until `expiresAt`. The storage service signs it with its S3 credentials, which
 * never leave it; the gateway opens it at once and never hands it on, so a download's bytes cross one
 * Node process instead of two.
 */
export interface ObjectReadUrl {
  url: string;
  expiresAt: string;
}

/** Long enough to outlast a clock skew between the storage service and S3; each URL is opened at once. */
export const READ_URL_TTL_SECONDS = 300;

export function readUrlPath(key: string): string {
  return `/internal/read-urls/${encodeURIComponent(key)}`;
}

/** A whole object, or the bytes `start`…`end` (inclusive) of one. */
export type ComposeSource = string | { key: string; start: number; end: number };

/** Body of POST /internal/compose/{key}: the object `key` becomes the concatenation of `sources`, in order. */
export interface ComposeRequest {
  sources: ComposeSource[];
  contentType?: string;
}

/** Answer of a compose: the new object's size and hashes (MD5 too, for the Uploads API's check). */
export interface ComposedObjectReceipt extends StoredObjectReceipt {
  md5: string;
}

export function composePath(key: string): string {
  return `/internal/compose/${encodeURIComponent(key)}`;
}

/**
 * Answer of POST /internal/hash/{key} (body `{"md5": false}` skips the MD5, a second pass the caller may
 * not need): the object's size and hashes, read from the bucket.
 */
export interface HashedObjectReceipt extends StoredObjectReceipt {
  md5: string | null;
}

export function hashPath(key: string): string {
  return `/internal/hash/${encodeURIComponent(key)}`;
}

/**
 * Multipart uploads a caller keeps open across requests (a resumable upload): POST opens one at `key`
 * (answer: `{uploadId}`); PUT …/blocks/{n} streams one part of 5 MiB to 64 MiB into block n of its S3
 * part numbers (answer: StoredObjectReceipt of the block's bytes); POST …/complete joins whole blocks;
 * DELETE aborts. The storage service records the S3 side in its journal (s3_multipart_uploads).
 */
export function multipartPath(key: string, uploadId?: string, action?: string): string {
  const base = `/internal/multipart/${encodeURIComponent(key)}`;
  if (uploadId === undefined) return base;
  return `${base}/${encodeURIComponent(uploadId)}${action ? `/${action}` : ''}`;
}

/** Body of POST /internal/multipart/{key}/{uploadId}/complete. */
export interface CompleteBlocksRequest {
  /**
   * Whole blocks, ascending: the object is exactly their bytes, in this order (409 upload_conflict when
   * the upload holds other parts too). Or 'all': every part the upload holds, in part-number order.
   */
  blocks: number[] | 'all';
  /** With a list of blocks: a stored object appended as the last part (a resumable upload's small last part). */
  lastSource?: string;
}

/** Answer of a block completion: the object's size and where each block landed in it. */
export interface CompletedBlocksReceipt {
  key: string;
  bytes: number;
  blocks: { block: number; offset: number; bytes: number }[];
}

/** A part smaller than this is not a block (S3's smallest part but the last): it is an object of its own. */
export const MIN_BLOCK_BYTES = 5 * 1024 * 1024;
/** A resumable upload's blocks are numbered 0 … MAX_UPLOAD_BLOCKS-1 (S3 allows 10,000 part numbers, 4 a block). */
export const MAX_UPLOAD_BLOCKS = 2499;
/** S3 part numbers set aside per block; a block is written as one S3 part, the first of its numbers. */
export const PART_NUMBERS_PER_BLOCK = 4;
export const firstPartNumberOf = (block: number) => block * PART_NUMBERS_PER_BLOCK + 1;
export const blockOfPartNumber = (partNumber: number) => Math.floor((partNumber - 1) / PART_NUMBERS_PER_BLOCK);
