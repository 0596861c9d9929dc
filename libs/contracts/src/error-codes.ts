/**
 * Every error code the API answers, with its HTTP status, its error type and when it is used. The
 * error filter, the OpenAPI document and the error table of docs/api.md are all made from this table.
 */
export const ERROR_CODES = {
  invalid_request: {
    status: 400,
    type: 'invalid_request_error',
    when: 'A field or query parameter is wrong; `param` names it.',
  },
  invalid_json: {
    status: 400,
    type: 'invalid_request_error',
    when: 'The body is not valid JSON, nests arrays and objects too deeply, or holds a lone surrogate escape.',
  },
  invalid_multipart: {
    status: 400,
    type: 'invalid_request_error',
    when: 'The multipart body is malformed, incomplete, holds two file parts or too many parts.',
  },
  missing_file: { status: 400, type: 'invalid_request_error', when: 'An upload has no part named `file`.' },
  invalid_filename: {
    status: 400,
    type: 'invalid_request_error',
    when: 'A filename is empty, `.` or `..`, or holds a control or bidi character.',
  },
  invalid_file_data: {
    status: 400,
    type: 'invalid_request_error',
    when: 'An inline `file_data` is not a strict base64 `data:` URL.',
  },
  invalid_api_key: {
    status: 401,
    type: 'authentication_error',
    when: 'The API key is missing, unknown or revoked (decided before any 404).',
  },
  not_found: {
    status: 404,
    type: 'not_found_error',
    when: 'No such route or thing, deleted, expired, another principal’s, or a malformed id: one body for all.',
  },
  file_too_large: {
    status: 413,
    type: 'invalid_request_error',
    when: 'An upload or inline file is over its limit (see `GET /v1/limits`); nothing is kept.',
  },
  upload_conflict: {
    status: 409,
    type: 'invalid_request_error',
    when:
      'An upload is not pending (cancelled, expired), or another request is completing it now; ' +
      '`GET /v1/uploads/{id}` says which.',
  },
  request_too_large: { status: 413, type: 'invalid_request_error', when: 'A JSON body is over `max_request_bytes`.' },
  unsupported_media_type: {
    status: 415,
    type: 'invalid_request_error',
    when: 'A body that is neither JSON (UTF-8, uncompressed) nor multipart where one is expected.',
  },
  range_not_satisfiable: {
    status: 416,
    type: 'invalid_request_error',
    when: 'A `Range` outside the file (with `Content-Range: bytes */<size>`).',
  },
  tus_version_unsupported: {
    status: 412,
    type: 'invalid_request_error',
    when: 'A tus request (other than OPTIONS) without `Tus-Resumable: 1.0.0`.',
  },
  rate_limited: {
    status: 429,
    type: 'rate_limit_error',
    when: 'A per-principal limit is reached; retry after `Retry-After` seconds.',
  },
  checksum_mismatch: {
    status: 460,
    type: 'invalid_request_error',
    when: 'A tus PATCH whose body does not match its `Upload-Checksum`; nothing of it is kept.',
  },
  internal_error: {
    status: 500,
    type: 'server_error',
    when:
      'A bug, or a listed file whose bytes are gone from the bucket (`x-should-retry: false`): logged; ' +
      'never a stack trace or a path in the body.',
  },
  preview_unavailable: {
    status: 501,
    type: 'not_implemented_error',
    when: 'Previews are off, or no worker can convert this format (`x-should-retry: false`).',
  },
  preview_failed: {
    status: 502,
    type: 'server_error',
    when: 'The file would not convert (`x-should-retry: false` when a retry cannot help) or took too long.',
  },
  service_unavailable: {
    status: 503,
    type: 'server_error',
    when: 'A dependency is down, or an archive build failed; retry after `Retry-After` seconds.',
  },
} as const satisfies Record<string, { status: number; type: string; when: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorBody {
  error: { type: string; code: ErrorCode; message: string; param: string | null };
}
