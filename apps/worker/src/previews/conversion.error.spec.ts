import { describe, expect, it } from 'vitest';
import { CONVERSION_FAILURES, ConversionError, PUBLIC_FAILURE_MESSAGES, toConversionError } from './conversion.error';

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

  it('the public message is a fixed sentence per failure class: no path, no converter output, no exception text', () => {
    const detailed = new ConversionError(
      'corrupt_document',
      'LibreOffice could not open the file: IllegalArgumentException: /tmp/uhp-previews-7/converters/office/0-1/io/input.docx',
      { cause: new Error('qpdf: /tmp/uhp-previews-7/jobs/job-abc/source: file is damaged') },
    );
    expect(detailed.publicMessage).toBe(PUBLIC_FAILURE_MESSAGES.corrupt_document);
    for (const failure of Object.keys(CONVERSION_FAILURES) as Array<keyof typeof CONVERSION_FAILURES>) {
      const message = new ConversionError(failure, `stderr of /usr/bin/x in /tmp/job: ${failure}`).publicMessage;
      expect(message).toBe(PUBLIC_FAILURE_MESSAGES[failure]);
      expect(message).not.toMatch(/[/\\]|stderr|Exception|\.(py|js|docx)\b/);
    }
    expect(new Set(Object.values(PUBLIC_FAILURE_MESSAGES)).size).toBe(Object.keys(CONVERSION_FAILURES).length);
  });
});
