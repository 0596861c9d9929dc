/**
 * Why a conversion failed, split by what a retry can do about it. The preview queue turns a permanent
 * failure into `UnrecoverableError` (the same bytes fail the same way every time) and lets a transient
 * one retry (a crashed or overloaded converter may well succeed on a fresh process).
 */
export const CONVERSION_FAILURES = {
  /** No converter handles this content type / extension. */
  unsupported_type: 'permanent',
  /** The converter read the bytes and refused them (random bytes named .docx, a truncated zip, a bad image). */
  corrupt_document: 'permanent',
  /** Larger than the converter accepts (pixels, bytes). */
  too_large: 'permanent',
  /** The converter finished but what it wrote is not a PDF we would serve. */
  invalid_output: 'permanent',
  /** Over the per-conversion wall-clock limit; the process was killed. */
  timeout: 'transient',
  /** The converter process died or its bridge broke mid-conversion. */
  process_crashed: 'transient',
  /** The converter could not be started (binary missing, sandbox refused, start-up timed out). */
  unavailable: 'transient',
  /** The caller aborted (job cancelled, worker shutting down). */
  aborted: 'transient',
} as const satisfies Record<string, 'permanent' | 'transient'>;

export type ConversionFailure = keyof typeof CONVERSION_FAILURES;

/**
 * What a user is told about a failed preview (the message recorded on the row and answered in the 502): a fixed
 * sentence per failure class. Never the error's own message, which may hold a path, converter output or an
 * exception text; that goes to the worker's log only.
 */
export const PUBLIC_FAILURE_MESSAGES: Record<ConversionFailure, string> = {
  unsupported_type: 'There is no PDF preview for this type of file.',
  corrupt_document: 'The file could not be read as the type of document its name or content type says it is.',
  too_large: 'The file is larger than previews accept.',
  invalid_output: 'The converter did not produce a usable PDF from this file.',
  timeout: 'The conversion took longer than the time limit.',
  process_crashed: 'The converter stopped unexpectedly.',
  unavailable: 'No converter could be started for this file.',
  aborted: 'The conversion was interrupted.',
};

export class ConversionError extends Error {
  readonly isPermanent: boolean;

  constructor(
    readonly failure: ConversionFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ConversionError';
    this.isPermanent = CONVERSION_FAILURES[failure] === 'permanent';
  }

  /** The fixed sentence of the failure class: safe to record and to show (see PUBLIC_FAILURE_MESSAGES). */
  get publicMessage(): string {
    return PUBLIC_FAILURE_MESSAGES[this.failure];
  }
}

/**
 * Anything thrown out of a converter, as a ConversionError: unknown errors count as transient (a bug or a crash, not
 * the document's fault).
 */
export function toConversionError(error: unknown, signal?: AbortSignal): ConversionError {
  if (error instanceof ConversionError) return error;
  if (signal?.aborted) return new ConversionError('aborted', 'conversion aborted', { cause: error });
  const message = error instanceof Error ? error.message : String(error);
  return new ConversionError('process_crashed', message, { cause: error });
}
