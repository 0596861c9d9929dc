/** Every error code of the contract (PROFILE §1) with its HTTP status and error type. */
export const ERROR_CODES = {
  invalid_request: { status: 400, type: 'invalid_request_error' },
  invalid_json: { status: 400, type: 'invalid_request_error' },
  invalid_multipart: { status: 400, type: 'invalid_request_error' },
  missing_file: { status: 400, type: 'invalid_request_error' },
  invalid_filename: { status: 400, type: 'invalid_request_error' },
  invalid_file_data: { status: 400, type: 'invalid_request_error' },
  invalid_api_key: { status: 401, type: 'authentication_error' },
  not_found: { status: 404, type: 'not_found_error' },
  file_too_large: { status: 413, type: 'invalid_request_error' },
  request_too_large: { status: 413, type: 'invalid_request_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  range_not_satisfiable: { status: 416, type: 'invalid_request_error' },
  rate_limited: { status: 429, type: 'rate_limit_error' },
  internal_error: { status: 500, type: 'server_error' },
  preview_unavailable: { status: 501, type: 'not_implemented_error' },
  preview_failed: { status: 502, type: 'server_error' },
  service_unavailable: { status: 503, type: 'server_error' },
} as const satisfies Record<string, { status: number; type: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorBody {
  error: { type: string; code: ErrorCode; message: string; param: string | null };
}
