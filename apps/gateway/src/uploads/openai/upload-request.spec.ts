import { describe, expect, it } from 'vitest';
import { ApiError } from '@app/common';
import { parseCompleteUpload, parseCreateUpload } from './upload-request';

const GiB = 1024 ** 3;
const valid = { filename: 'a.bin', purpose: 'assistants', bytes: 10, mime_type: 'application/octet-stream' };
const paramOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return { code: (error as ApiError).code, param: (error as ApiError).param };
  }
  throw new Error('no error');
};

describe('POST /v1/uploads bodies', () => {
  it('takes OpenAI’s fields, with a one-hour expiry unless expires_after says otherwise', () => {
    expect(parseCreateUpload(valid, 64 * GiB)).toEqual({
      filename: 'a.bin',
      purpose: 'assistants',
      bytes: 10,
      mimeType: 'application/octet-stream',
      expiresInSeconds: 3600,
    });
    const later = parseCreateUpload({ ...valid, expires_after: { anchor: 'created_at', seconds: 7200 } }, 64 * GiB);
    expect(later.expiresInSeconds).toBe(7200);
  });

  it('names the field at fault, and answers 413 for bytes over max_upload_bytes', () => {
    expect(paramOf(() => parseCreateUpload({ ...valid, bytes: 65 * GiB }, 64 * GiB))).toEqual({
      code: 'file_too_large',
      param: 'bytes',
    });
    expect(paramOf(() => parseCreateUpload({ ...valid, bytes: -1 }, 64 * GiB)).param).toBe('bytes');
    expect(paramOf(() => parseCreateUpload({ ...valid, purpose: 'x' }, 64 * GiB)).param).toBe('purpose');
    expect(paramOf(() => parseCreateUpload({ ...valid, mime_type: 'nope' }, 64 * GiB)).param).toBe('mime_type');
    expect(paramOf(() => parseCreateUpload({ ...valid, filename: '..' }, 64 * GiB)).param).toBe('filename');
    const early = { ...valid, expires_after: { anchor: 'created_at', seconds: 60 } };
    expect(paramOf(() => parseCreateUpload(early, 64 * GiB)).param).toBe('expires_after');
  });
});

describe('POST /v1/uploads/{id}/complete bodies', () => {
  it('takes part ids in order and an optional md5', () => {
    expect(parseCompleteUpload({ part_ids: ['part_b', 'part_a'], md5: 'A'.repeat(32) })).toEqual({
      partIds: ['part_b', 'part_a'],
      md5: 'a'.repeat(32),
    });
    expect(parseCompleteUpload({ part_ids: ['part_a'] }).md5).toBeNull();
  });

  it('refuses no parts, a part named twice and a malformed md5', () => {
    expect(paramOf(() => parseCompleteUpload({ part_ids: [] })).param).toBe('part_ids');
    expect(paramOf(() => parseCompleteUpload({ part_ids: ['part_a', 'part_a'] })).param).toBe('part_ids');
    expect(paramOf(() => parseCompleteUpload({ part_ids: ['part_a'], md5: 'xyz' })).param).toBe('md5');
  });
});
