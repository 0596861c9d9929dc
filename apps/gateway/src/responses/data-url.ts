import { ApiError } from '@app/common';

export interface DecodedDataUrl {
  /** The media type as written (without the `;base64` marker), or '' when the URL gives none. */
  mediaType: string;
  bytes: Buffer;
}

// data:[<type>/<subtype>][;<name>=<value>]*;base64,<data> — RFC 2397, base64 only, nothing around it.
const TOKEN = String.raw`[!#$&^_.+\w-]+`;
const PARAMETER = String.raw`;${TOKEN}=(?:${TOKEN}|"[^"\\\r\n]*")`;
const DATA_URL = new RegExp(
  String.raw`^data:((?:${TOKEN}\/${TOKEN})?(?:${PARAMETER})*);base64,([A-Za-z0-9+/]*)(={0,2})$`,
);
const BASE64_INDEX = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Bytes a base64 text of `length` characters (padding included) and `padding` '=' decodes to. */
export function decodedLength(length: number, padding: number): number {
  return (length / 4) * 3 - padding;
}

/**
 * Decodes an inline `file_data` strictly (docs/api.md §4): a `data:` URL with `;base64`, canonical
 * padded base64 and nothing else. Malformed is `400 invalid_file_data`; over `maxBytes` decoded is
 * `413 file_too_large`, judged from the length before a byte is decoded. Both name `param`.
 */
export function decodeDataUrl(value: unknown, maxBytes: number, param: string): DecodedDataUrl {
  const invalid = (why: string) =>
    new ApiError(
      'invalid_file_data',
      `file_data must be a data URL with base64 content (data:<type>;base64,<data>): ${why}.`,
      param,
    );
  if (typeof value !== 'string') throw invalid('it is not a string');
  const match = DATA_URL.exec(value);
  if (!match)
    throw invalid(
      value.startsWith('data:') ? 'the URL is malformed or not base64-encoded' : 'it does not start with data:',
    );
  const [, mediaType, body, padding] = match;
  const length = body.length + padding.length;
  if (length % 4 !== 0) throw invalid('the base64 length is not a multiple of 4');
  // Non-canonical trailing bits ("SGVsbG9=" for "Hello") would decode silently to the same bytes.
  if (padding.length > 0) {
    const last = BASE64_INDEX.indexOf(body.at(-1) ?? 'A');
    if ((padding.length === 1 ? last & 0b11 : last & 0b1111) !== 0)
      throw invalid('the base64 padding is not canonical');
  }
  const size = decodedLength(length, padding.length);
  if (size > maxBytes)
    throw new ApiError(
      'file_too_large',
      `The inline file decodes to ${size} bytes; max_inline_file_bytes is ${maxBytes} (see GET /v1/limits). ` +
        'Upload it with POST /v1/files and send its file_id.',
      param,
    );
  return { mediaType: mediaType.split(';')[0], bytes: Buffer.from(body, 'base64') };
}
