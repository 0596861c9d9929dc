import { ERROR_CODES, type ErrorBody, type ErrorCode } from '@app/contracts';

/**
 * The one domain error of uhp-files. Services and jobs throw it with a contract code; the global
 * filter turns it into the contract's error body and status.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly type: string;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly param: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = ERROR_CODES[code].status;
    this.type = ERROR_CODES[code].type;
  }

  static notFound(what = 'resource', param: string | null = null): ApiError {
    return new ApiError('not_found', `No such ${what}.`, param);
  }

  static invalid(message: string, param: string | null = null): ApiError {
    return new ApiError('invalid_request', message, param);
  }

  toBody(): ErrorBody {
    return { error: { type: this.type, code: this.code, message: this.message, param: this.param } };
  }
}

/** A retry cannot fix these: tell the OpenAI SDK not to retry (docs/api.md §1). */
export const NO_RETRY_HEADERS = { 'x-should-retry': 'false' } as const;

/** The client hung up before the request was done: nothing to answer, nothing to log as a failure. */
export class ClientGoneError extends Error {
  constructor(message = 'client disconnected') {
    super(message);
    this.name = 'ClientGoneError';
  }
}
