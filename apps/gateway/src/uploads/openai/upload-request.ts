import { ApiError } from '@app/common';
import type { FilePurpose } from '@app/db';
import { MAX_EXPIRY_SECONDS, MIN_EXPIRY_SECONDS, toPurpose } from '../../files/file-fields';
import { acceptFilename } from '../receiver/filename';
import { DEFAULT_UPLOAD_EXPIRY_SECONDS } from '../resumable/pending-uploads';

export interface CreateUploadInput {
  filename: string;
  purpose: FilePurpose;
  bytes: number;
  mimeType: string;
  expiresInSeconds: number;
}

export interface CompleteUploadInput {
  partIds: string[];
  md5: string | null;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** POST /v1/uploads, checked whole before anything is written; `maxBytes` is the largest file of any kind. */
export function parseCreateUpload(body: unknown, maxBytes: number): CreateUploadInput {
  if (!isObject(body)) throw ApiError.invalid('The body must be a JSON object.');
  if (typeof body.filename !== 'string') throw ApiError.invalid('filename is required.', 'filename');
  const filename = acceptFilename(body.filename, 'filename');
  if (typeof body.purpose !== 'string') throw ApiError.invalid('purpose is required.', 'purpose');
  const purpose = toPurpose(body.purpose);
  const bytes = body.bytes;
  if (typeof bytes !== 'number' || !Number.isSafeInteger(bytes) || bytes < 0)
    throw ApiError.invalid('bytes must be a non-negative integer.', 'bytes');
  if (bytes > maxBytes)
    throw new ApiError(
      'file_too_large',
      `bytes is ${bytes}; max_upload_bytes is ${maxBytes} (see GET /v1/limits).`,
      'bytes',
    );
  const mimeType = body.mime_type;
  if (typeof mimeType !== 'string' || !/^[\w.+-]+\/[\w.+-]+$/.test(mimeType) || mimeType.length > 255)
    throw ApiError.invalid('mime_type must be a MIME type such as text/plain.', 'mime_type');
  let expiresInSeconds = DEFAULT_UPLOAD_EXPIRY_SECONDS;
  if (body.expires_after !== undefined && body.expires_after !== null) {
    const after = body.expires_after;
    if (!isObject(after) || after.anchor !== 'created_at')
      throw ApiError.invalid('expires_after.anchor must be created_at.', 'expires_after');
    const seconds = after.seconds;
    if (
      typeof seconds !== 'number' ||
      !Number.isInteger(seconds) ||
      seconds < MIN_EXPIRY_SECONDS ||
      seconds > MAX_EXPIRY_SECONDS
    )
      throw ApiError.invalid(
        `expires_after.seconds must be an integer from ${MIN_EXPIRY_SECONDS} to ${MAX_EXPIRY_SECONDS}.`,
        'expires_after',
      );
    expiresInSeconds = seconds;
  }
  return { filename, purpose, bytes, mimeType: mimeType.toLowerCase(), expiresInSeconds };
}

/** POST /v1/uploads/{id}/complete: the parts in file order (each once), and an optional MD5 of the whole. */
export function parseCompleteUpload(body: unknown): CompleteUploadInput {
  if (!isObject(body)) throw ApiError.invalid('The body must be a JSON object.');
  const partIds = body.part_ids;
  if (!Array.isArray(partIds) || partIds.length === 0 || !partIds.every((id) => typeof id === 'string'))
    throw ApiError.invalid('part_ids must be a non-empty list of part ids.', 'part_ids');
  if (new Set(partIds).size !== partIds.length)
    throw ApiError.invalid('part_ids names a part more than once.', 'part_ids');
  const md5 = body.md5;
  if (md5 !== undefined && md5 !== null && (typeof md5 !== 'string' || !/^[0-9a-fA-F]{32}$/.test(md5)))
    throw ApiError.invalid('md5 must be 32 hexadecimal digits.', 'md5');
  return { partIds: partIds as string[], md5: typeof md5 === 'string' ? md5.toLowerCase() : null };
}
