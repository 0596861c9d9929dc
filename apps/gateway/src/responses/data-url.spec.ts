import { describe, expect, it } from 'vitest';
import { ApiError } from '@app/common';
import { decodeDataUrl } from './data-url';

const PARAM = 'input[0].content[1].file_data';

function rejection(value: unknown, max = 1024): ApiError {
  try {
    decodeDataUrl(value, max, PARAM);
  } catch (error) {
    return error as ApiError;
  }
  throw new Error(`accepted ${String(value)}`);
}

describe('decodeDataUrl', () => {
  it('decodes base64 data URLs with or without a media type and parameters', () => {
    expect(decodeDataUrl('data:text/plain;base64,SGVsbG8=', 10, PARAM)).toEqual({
      mediaType: 'text/plain',
      bytes: Buffer.from('Hello'),
    });
    expect(decodeDataUrl('data:text/plain;charset=utf-8;base64,SGk=', 10, PARAM).bytes.toString()).toBe('Hi');
    expect(decodeDataUrl('data:;base64,AAECAw==', 10, PARAM)).toEqual({
      mediaType: '',
      bytes: Buffer.from([0, 1, 2, 3]),
    });
    expect(decodeDataUrl('data:application/octet-stream;base64,', 10, PARAM).bytes.length).toBe(0);
  });

  it.each([
    ['characters outside base64', 'data:text/plain;base64,%%%not*base64%%%'],
    ['no comma', 'data:text/plain;base64'],
    ['not base64-encoded', 'data:text/plain,hello'],
    ['an https URL', 'https://example.com/file.txt'],
    ['garbage after the padding', 'data:text/plain;base64,SGVsbG8=!!'],
    ['no data: scheme', 'text/plain;base64,SGVsbG8='],
    ['a length that is not a multiple of 4', 'data:text/plain;base64,SGVsbG8'],
    ['whitespace inside', 'data:text/plain;base64,SGVs bG8='],
    ['url-safe alphabet', 'data:text/plain;base64,-_-_'],
    ['non-canonical padding bits', 'data:text/plain;base64,SGVsbG9='],
    ['three padding characters', 'data:text/plain;base64,SGVsbA==='],
    ['a number', 42],
  ])('rejects %s as 400 invalid_file_data with the param', (_label, value) => {
    const error = rejection(value);
    expect(error.code).toBe('invalid_file_data');
    expect(error.status).toBe(400);
    expect(error.param).toBe(PARAM);
  });

  it('answers 413 file_too_large from the length alone, one byte over the limit', () => {
    expect(decodeDataUrl(`data:;base64,${Buffer.alloc(9).toString('base64')}`, 9, PARAM).bytes.length).toBe(9);
    const error = rejection(`data:;base64,${Buffer.alloc(10).toString('base64')}`, 9);
    expect([error.code, error.status, error.param]).toEqual(['file_too_large', 413, PARAM]);
  });
});
