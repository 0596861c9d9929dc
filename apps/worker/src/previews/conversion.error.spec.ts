import { describe, expect, it } from 'vitest';
import { CONVERSION_FAILURES, ConversionError, toConversionError } from './conversion.error';

describe('ConversionError', () => {
  it('document faults are permanent; converter faults are transient', () => {
    for (const failure of ['unsupported_type', 'corrupt_document', 'too_large', 'invalid_output'] as const)
      expect(new ConversionError(failure, 'x').isPermanent).toBe(true);
    for (const failure of ['timeout', 'process_crashed', 'unavailable', 'aborted'] as const)
      expect(new ConversionError(failure, 'x').isPermanent).toBe(false);
    expect(Object.keys(CONVERSION_FAILURES)).toHaveLength(8);
  });

  it('toConversionError keeps typed errors and treats unknown ones as transient crashes', () => {
    const typed = new ConversionError('corrupt_document', 'bad');
    expect(toConversionError(typed)).toBe(typed);
    const unknown = toConversionError(new Error('EPIPE'));
    expect(unknown.failure).toBe('process_crashed');
    expect(unknown.isPermanent).toBe(false);
    expect(unknown.cause).toBeInstanceOf(Error);
  });

  it('an error after the caller aborted is an abort', () => {
    const controller = new AbortController();
    controller.abort();
    expect(toConversionError(new Error('Target closed'), controller.signal).failure).toBe('aborted');
  });
});
