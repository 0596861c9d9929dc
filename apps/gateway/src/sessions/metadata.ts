import { ApiError } from '@app/common';

const MAX_KEYS = 16;
const MAX_KEY_LENGTH = 64;
const MAX_VALUE_LENGTH = 512;

/** Metadata as OpenAI takes it: up to 16 string pairs, keys up to 64 and values up to 512 characters. */
export function acceptMetadata(value: unknown, param = 'metadata'): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw ApiError.invalid('metadata must be an object of strings.', param);
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_KEYS) throw ApiError.invalid(`metadata holds at most ${MAX_KEYS} keys.`, param);
  for (const [key, item] of entries) {
    if (key.length === 0 || key.length > MAX_KEY_LENGTH)
      throw ApiError.invalid(`metadata keys are 1 to ${MAX_KEY_LENGTH} characters.`, param);
    if (typeof item !== 'string' || item.length > MAX_VALUE_LENGTH)
      throw ApiError.invalid(`metadata values are strings of at most ${MAX_VALUE_LENGTH} characters.`, param);
    // Postgres stores no U+0000 (a 500 the fuzzer found); nor would a client read it back intact.
    if (key.includes('\u0000') || item.includes('\u0000'))
      throw ApiError.invalid('metadata keys and values cannot hold U+0000.', param);
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

/** A JSON body must be an object (or absent). */
export function bodyObject(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw ApiError.invalid('The JSON body must be an object.');
  return body as Record<string, unknown>;
}
