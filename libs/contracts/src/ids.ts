import { randomBytes } from 'node:crypto';

/** Public id prefixes (docs/api.md §1). Ids are opaque: a prefix and 24 random base62 characters. */
export const ID_PREFIX = {
  file: 'file',
  container: 'cntr',
  session: 'sess',
  response: 'resp',
  message: 'msg',
  upload: 'upload',
  uploadPart: 'part',
} as const;

export type IdKind = keyof typeof ID_PREFIX;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 24;
// 62 * 4 = 248: bytes at or above it are dropped so every character is equally likely.
const UNBIASED_LIMIT = 248;

export function newId(kind: IdKind): string {
  let out = '';
  while (out.length < RANDOM_LENGTH) {
    for (const byte of randomBytes(RANDOM_LENGTH * 2)) {
      if (byte < UNBIASED_LIMIT) out += BASE62[byte % 62];
      if (out.length === RANDOM_LENGTH) break;
    }
  }
  return `${ID_PREFIX[kind]}_${out}`;
}

const ID_PATTERNS: Record<IdKind, RegExp> = {
  file: /^file_[0-9A-Za-z]{24,64}$/,
  container: /^cntr_[0-9A-Za-z]{24,64}$/,
  session: /^sess_[0-9A-Za-z]{24,64}$/,
  response: /^resp_[0-9A-Za-z]{24,64}$/,
  message: /^msg_[0-9A-Za-z]{24,64}$/,
  upload: /^upload_[0-9A-Za-z]{24,64}$/,
  uploadPart: /^part_[0-9A-Za-z]{24,64}$/,
};

/** True when `value` is exactly an id of that kind; anything else is answered 404 before any lookup. */
export function isId(kind: IdKind, value: unknown): value is string {
  return typeof value === 'string' && ID_PATTERNS[kind].test(value);
}
