import type { UploadPartRow, UploadRow } from '@app/db';

/** A pending upload of the Uploads API, as the repository returns it; `overrides` set what a test is about. */
export const uploadRow = (overrides: Partial<UploadRow> = {}): UploadRow => ({
  id: 'upload_test',
  filename: 'data.bin',
  purpose: 'user_data',
  bytes: 0n,
  mimeType: 'application/octet-stream',
  status: 'pending',
  claimedUntil: null,
  fileId: null,
  protocol: 'openai',
  offsetBytes: 0n,
  tusMetadata: null,
  storageKey: null,
  s3UploadId: null,
  createdAt: new Date(0),
  expiresAt: new Date(Date.now() + 3_600_000),
  ...overrides,
});

/** A block part: block `block` of the upload's open multipart upload. */
export const blockPart = (id: string, block: number, bytes: number): UploadPartRow => ({
  id,
  uploadId: 'upload_test',
  objectId: null,
  block,
  objectOffset: 0n,
  bytes: BigInt(bytes),
  sha256: 'block-sha256',
  createdAt: new Date(0),
  storageKey: null,
});

/** A part whose bytes are `bytes` of a stored object from `offset` on (its own object, or a staged one shared). */
export const objectPart = (id: string, object: string, bytes: number, offset = 0): UploadPartRow => ({
  id,
  uploadId: 'upload_test',
  objectId: object,
  block: null,
  objectOffset: BigInt(offset),
  bytes: BigInt(bytes),
  sha256: 'part-sha256',
  createdAt: new Date(0),
  storageKey: `objects/${object}`,
});
