import { NotFoundException, PayloadTooLargeException } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { ApiError } from './api-error';
import { toApiError } from './error.filter';

describe('toApiError', () => {
  it('keeps a domain error as it is', () => {
    const error = new ApiError('file_too_large', 'too big', 'file');
    expect(toApiError(error)).toBe(error);
    expect(error.toBody()).toEqual({
      error: { type: 'invalid_request_error', code: 'file_too_large', message: 'too big', param: 'file' },
    });
    expect(error.status).toBe(413);
  });

  it('maps framework exceptions and hides unknown errors', () => {
    expect(toApiError(new NotFoundException()).toBody().error).toMatchObject({
      type: 'not_found_error',
      code: 'not_found',
    });
    expect(toApiError(new PayloadTooLargeException()).code).toBe('request_too_large');
    const hidden = toApiError(new Error('/secret/path exploded'));
    expect(hidden.code).toBe('internal_error');
    expect(hidden.message).not.toMatch(/secret/);
  });
});
