import { ApiError } from '@app/common';
import type { FilePurpose } from '@app/db';
import { toPurpose } from '../files/file-fields';
import { acceptFilename } from '../uploads/receiver/filename';

/** tus 1.0 (https://tus.io/protocols/resumable-upload), as /v1/tus speaks it. */
export const TUS_VERSION = '1.0.0';
export const TUS_EXTENSIONS = 'creation,creation-with-upload,termination,expiration,checksum';
export const TUS_CHECKSUM_ALGORITHMS = ['sha1', 'sha256'] as const;
export type TusChecksumAlgorithm = (typeof TUS_CHECKSUM_ALGORITHMS)[number];
export const TUS_CONTENT_TYPE = 'application/offset+octet-stream';

export interface TusMetadata {
  filename: string;
  purpose: FilePurpose;
  contentType: string;
}

/** `Upload-Metadata: key base64,key base64`: filename, purpose (default user_data), content_type. */
export function parseTusMetadata(header: string | undefined): TusMetadata {
  const pairs = new Map<string, string>();
  for (const item of (header ?? '').split(',')) {
    const [key, value] = item.trim().split(/\s+/, 2);
    if (!key) continue;
    pairs.set(key, value === undefined ? '' : Buffer.from(value, 'base64').toString('utf8'));
  }
  const filename = acceptFilename(pairs.get('filename') ?? pairs.get('name'), 'Upload-Metadata');
  const purpose = toPurpose(pairs.get('purpose') ?? 'user_data', 'Upload-Metadata');
  const type = pairs.get('content_type') ?? pairs.get('filetype') ?? pairs.get('type') ?? '';
  const contentType = /^[\w.+-]+\/[\w.+-]+$/.test(type) ? type.toLowerCase() : 'application/octet-stream';
  return { filename, purpose, contentType };
}

/** A non-negative integer header (Upload-Length, Upload-Offset); 400 otherwise. */
export function byteHeader(value: string | string[] | undefined, name: string): number {
  const text = Array.isArray(value) ? value[0] : value;
  const number = text !== undefined && /^\d{1,16}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(number)) throw ApiError.invalid(`${name} must be a non-negative integer.`, name);
  return number;
}

/** `Upload-Checksum: <algorithm> <base64 digest>`; 400 for an algorithm we do not speak. */
export function parseChecksum(header: string | undefined): { algorithm: TusChecksumAlgorithm; digest: string } | null {
  if (!header) return null;
  const [algorithm, digest] = header.trim().split(/\s+/, 2);
  if (!(TUS_CHECKSUM_ALGORITHMS as readonly string[]).includes(algorithm) || !digest)
    throw ApiError.invalid(`Upload-Checksum must be one of ${TUS_CHECKSUM_ALGORITHMS.join(', ')}.`, 'Upload-Checksum');
  return { algorithm: algorithm as TusChecksumAlgorithm, digest };
}
