import { ApiError } from '@app/common';

const MAX_FILENAME_BYTES = 255;
// Unicode Cc (C0, DEL, C1) and the bidi embedding/override/isolate controls.
const FORBIDDEN = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;

/** Cuts a string to at most `maxBytes` of UTF-8 without splitting a character. */
export function truncateUtf8(value: string, maxBytes: number): string {
  if (Buffer.byteLength(value, 'utf8') <= maxBytes) return value;
  let out = '';
  let used = 0;
  for (const char of value) {
    const size = Buffer.byteLength(char, 'utf8');
    if (used + size > maxBytes) break;
    out += char;
    used += size;
  }
  return out;
}

/**
 * The display name of an upload (docs/api.md §2): the last path segment, NFC, at most 255 bytes. Empty,
 * `.`, `..` or a name holding a control or bidi character is rejected. The name is only ever shown
 * and put in Content-Disposition, never used to build a key or a path.
 */
export function acceptFilename(raw: string | undefined | null, param = 'file'): string {
  const given = raw ?? '';
  const lastSegment = given.slice(Math.max(given.lastIndexOf('/'), given.lastIndexOf('\\')) + 1);
  const name = truncateUtf8(lastSegment.normalize('NFC'), MAX_FILENAME_BYTES);
  if (name === '' || name === '.' || name === '..' || FORBIDDEN.test(name)) {
    throw new ApiError(
      'invalid_filename',
      'The filename is empty, "." or "..", or holds a control or bidi character.',
      param,
    );
  }
  return name;
}
