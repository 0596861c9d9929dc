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

  // Found by the fault tier: with Postgres stopped every request answered 500 internal_error.
  it('answers 503 when a dependency is unreachable or dropped the connection, and 500 for the rest', () => {
    const prismaDown = Object.assign(new Error("Can't reach database server at 127.0.0.1:5432"), { code: 'P1001' });
    const terminated = Object.assign(new Error('DriverAdapterError'), {
      cause: { kind: 'postgres', code: '57P01', message: 'terminating connection due to administrator command' },
    });
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });
    const closed = { name: 'DriverAdapterError', message: 'x', cause: { kind: 'ConnectionClosed' } };
    const ioredis = new Error("Stream isn't writeable and enableOfflineQueue options is false");
    for (const error of [prismaDown, terminated, refused, closed, ioredis])
      expect(toApiError(error).code, String(error)).toBe('service_unavailable');
    const unique = Object.assign(new Error('Unique constraint failed'), { code: 'P2002' });
    const syntax = { message: 'x', cause: { kind: 'postgres', code: '42601' } };
    for (const error of [unique, syntax]) expect(toApiError(error).code).toBe('internal_error');
  });
});
